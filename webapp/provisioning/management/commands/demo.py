"""``manage.py demo [--tenant NAME] [--json]``: a tenant, keys, a topic and ACLs to try Weir with."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.accounts.facade import ActionError
from webapp.provisioning.demo import DemoCredentials, DemoError, DemoSetup, set_up_demo, wait_for_jobs
from webapp.provisioning.models import JobState

# How long the command waits for the demo's provisioning jobs by default.
DEFAULT_WAIT_SECONDS = 60.0


class Command(BaseCommand):
    help = "Create (or reuse) a demo tenant with a user, a service account, API keys, a topic and ACLs; print how to connect."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", default="demo", help="the demo tenant's name (default: demo)")
        parser.add_argument("--json", action="store_true", help="print one JSON object with the credentials")
        parser.add_argument(
            "--wait-seconds",
            type=float,
            default=DEFAULT_WAIT_SECONDS,
            help="how long to wait for the provisioning jobs to reach the brokers (0: do not wait)",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            setup = set_up_demo(str(options["tenant"]))
        except (ActionError, DemoError) as error:
            details = getattr(error, "errors", None)
            raise CommandError(f"demo: {error}" + (f" {details}" if details else "")) from None
        wait_seconds = float(options["wait_seconds"])  # type: ignore[arg-type]
        if wait_seconds > 0:
            self._wait(setup, wait_seconds)
        if options["json"]:
            self.stdout.write(json.dumps(asdict(setup.credentials)))
        else:
            self.stdout.write(self._describe(setup))

    def _wait(self, setup: DemoSetup, wait_seconds: float) -> None:
        jobs = wait_for_jobs(setup.job_ids, wait_seconds)
        failed = [job for job in jobs if job.state == JobState.FAILED]
        unfinished = [job for job in jobs if job.state not in (JobState.SUCCEEDED, JobState.FAILED)]
        if failed:
            details = "\n".join(f"  {job.public_id} {job.kind} {job.target}: {job.error}" for job in failed)
            raise CommandError(f"demo: provisioning failed; the brokers did not accept the demo's changes:\n{details}")
        if unfinished:
            names = ", ".join(f"{job.public_id} {job.kind} ({job.state})" for job in unfinished)
            raise CommandError(
                f"demo: provisioning jobs not finished after {wait_seconds:g} s: {names}. Is a Celery worker running (python -m celery -A webapp worker)?"
            )

    @staticmethod
    def _describe_kafka(credentials: DemoCredentials) -> list[str]:
        """How a stock Kafka client (librdkafka, kafka-python, KafkaJS, kcat) connects: the brokers' Kafka listeners."""
        if not credentials.kafka_bootstrap_servers:
            return []
        return [
            f"Kafka clients: bootstrap.servers={credentials.kafka_bootstrap_servers}",
            "  security.protocol=SASL_PLAINTEXT (SASL_SSL when the brokers serve TLS), sasl.mechanism=PLAIN,",
            "  sasl.username and sasl.password as above (the cluster API key and its secret)",
            "",
        ]

    @staticmethod
    def _describe(setup: DemoSetup) -> str:
        credentials = setup.credentials
        return "\n".join(
            [
                f"Weir demo tenant {setup.tenant_name!r} ({credentials.tenant}) is ready.",
                "",
                f"Sign in:     {credentials.dashboard_url}",
                f"  username   {credentials.username}",
                f"  password   {credentials.password}",
                "",
                f"REST API:    {credentials.api_url}  (docs: {credentials.dashboard_url}api/docs/)",
                f"  curl -u {credentials.cloud_api_key}:{credentials.cloud_api_secret} {credentials.api_url}/topics",
                f"  (the cloud key is {credentials.username}'s, the tenant's owner: topics, ACLs, keys and members)",
                "",
                f"Schema Registry: {credentials.schema_registry_url}  (Confluent's API; HTTP Basic with the cloud key)",
                f"  SchemaRegistryClient({{'url': '{credentials.schema_registry_url}', 'basic.auth.user.info': '{credentials.cloud_api_key}:<secret>'}})",
                "",
                f"Data plane:  bootstrap.servers={credentials.bootstrap_servers}",
                f"  service account {credentials.service_account} may produce to and consume from topics and groups named demo*",
                f"  sasl.username={credentials.cluster_api_key}",
                f"  sasl.password={credentials.cluster_api_secret}",
                "",
                *Command._describe_kafka(credentials),
                "Secrets are shown once; run `python manage.py demo` again for new ones (the old demo keys are revoked).",
            ]
        )
