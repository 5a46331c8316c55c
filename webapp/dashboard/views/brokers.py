"""The broker fleet, for operators (staff users) only."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.dashboard.tenancy import operator_page, page_context
from webapp.fleet.facade import brokers


@operator_page
def broker_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/brokers.html", page_context(request, "brokers", brokers=list(brokers())))
