"""The backup schema covers the project's models: a new model or field must be classified."""

from __future__ import annotations

from django.apps import apps

from webapp.backup.schema import MIGRATED_APPS, REFERENCE, REFERENCE_LIST, SECTIONS, SECTIONS_BY_NAME, SKIPPED_MODELS


def test_every_model_is_backed_up_or_skipped_with_a_reason() -> None:
    backed_up = {section.model for section in SECTIONS}
    unclassified = [model._meta.label for model in apps.get_models() if model._meta.label not in backed_up | set(SKIPPED_MODELS)]
    assert unclassified == [], f"add these models to webapp/backup/schema.py (a section, or SKIPPED_MODELS with why): {unclassified}"
    assert not backed_up & set(SKIPPED_MODELS)
    assert all(reason.strip() for reason in SKIPPED_MODELS.values())


def test_every_field_of_a_backed_up_model_is_in_its_section_or_skipped_with_a_reason() -> None:
    for section in SECTIONS:
        model = apps.get_model(section.model)
        on_model = {field.name for field in model._meta.concrete_fields} | {field.name for field in model._meta.many_to_many}
        classified = set(section.field_names) | set(section.skipped_fields)
        assert on_model - classified == set(), f"{section.model}: fields neither backed up nor skipped"
        assert classified - on_model == set(), f"{section.model}: the section names fields the model does not have"


def test_references_name_an_earlier_section_by_its_key() -> None:
    order = [section.name for section in SECTIONS]
    for section in SECTIONS:
        for member in section.fields:
            if member.kind in (REFERENCE, REFERENCE_LIST):
                target = SECTIONS_BY_NAME[member.target]
                assert target.key, f"{section.name}.{member.name} names {target.name}, whose rows have no key"
                if member.kind == REFERENCE_LIST:  # many-to-many lists hold one-field keys
                    assert len(target.key) == 1, f"{section.name}.{member.name} lists {target.name}, whose key has {len(target.key)} fields"
                assert order.index(target.name) < order.index(section.name), f"{section.name} is restored before {target.name}, which it names"
        assert set(section.key) <= set(section.field_names)
        assert section.key or section.singleton, f"{section.name}: rows need a key unless the section is a singleton"


def test_the_schema_registry_is_backed_up_in_dependency_order() -> None:
    order = [section.name for section in SECTIONS]
    assert order.index("tenants") < order.index("schema_registries") < order.index("schemas")
    assert order.index("schemas") < min(order.index("schema_references"), order.index("subject_versions"))
    assert SECTIONS_BY_NAME["schemas"].key == ("tenant", "schema_id")
    assert SECTIONS_BY_NAME["subject_versions"].key == ("tenant", "subject", "version")
    assert "schemas" in MIGRATED_APPS
