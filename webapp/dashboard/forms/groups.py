"""Forms of the consumer group pages: what to reset offsets to, the confirmation of a
previewed plan, and the typed confirmation of a deletion."""

from __future__ import annotations

from datetime import UTC

from django import forms

from webapp.consumer_groups import PlannedChange, ResetRequest

TARGET_CHOICES = [
    ("earliest", "Earliest offset (reprocess everything kept)"),
    ("latest", "Latest offset (skip to the end)"),
    ("timestamp", "First offset at or after a time (UTC)"),
    ("offset", "A given offset in every partition"),
]


MAX_PARTITION_NUMBER = 100_000  # far above any topic's partition count; bounds a range like 0-999999999


def parse_partition_numbers(text: str) -> tuple[int, ...]:
    """``"0,2-3"`` -> (0, 2, 3); empty -> (). ValidationError says what is wrong."""
    numbers: set[int] = set()
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        low, dash, high = part.partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise forms.ValidationError(f"{part!r} is not a partition number or a range like 2-5.")
        first, last = int(low), int(high) if dash else int(low)
        if first > last or last > MAX_PARTITION_NUMBER:
            raise forms.ValidationError(f"{part!r} is not a range of partition numbers from 0 to {MAX_PARTITION_NUMBER}.")
        numbers.update(range(first, last + 1))
    return tuple(sorted(numbers))


class ResetOffsetsForm(forms.Form):
    """Topics (the tenant's, by name) and where to move the group's offsets in all their partitions."""

    topics = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple, help_text="Every partition of these topics is reset.")
    to = forms.ChoiceField(choices=TARGET_CHOICES, initial="latest", widget=forms.RadioSelect, label="Reset to")
    timestamp = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}),
        help_text="With “a time”, in UTC.",
    )
    offset = forms.IntegerField(min_value=0, required=False, help_text="With “a given offset”.")
    partitions = forms.CharField(
        required=False,
        max_length=200,
        help_text="Only these partitions of each topic, e.g. 0,2-3; empty: every partition.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "inputmode": "numeric"}),
    )

    def __init__(self, *args: object, topic_names: list[str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["topics"].choices = [(name, name) for name in topic_names]  # type: ignore[attr-defined]

    def clean_partitions(self) -> tuple[int, ...]:
        return parse_partition_numbers(self.cleaned_data.get("partitions") or "")

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("to") == "timestamp" and data.get("timestamp") is None:
            self.add_error("timestamp", "Give the time to reset to.")
        if data.get("to") == "offset" and data.get("offset") is None:
            self.add_error("offset", "Give the offset to reset to.")
        return data

    def reset_request(self) -> ResetRequest:
        data = self.cleaned_data
        timestamp_ms = None
        if data["to"] == "timestamp":
            # datetime-local carries no zone: the form says UTC, so read it as UTC.
            moment = data["timestamp"].replace(tzinfo=UTC) if data["timestamp"].tzinfo is None else data["timestamp"]
            timestamp_ms = int(moment.timestamp() * 1000)
        return ResetRequest(to=data["to"], topics=list(data["topics"]), timestamp_ms=timestamp_ms, offset=data.get("offset"), partitions=data["partitions"])


class ConfirmResetForm(forms.Form):
    """The previewed plan, carried back as ``topic,partition,offset`` entries joined by
    ``;``: confirming applies exactly the offsets the user saw, not a plan recomputed a
    moment later (when "latest" may already mean something else)."""

    plan = forms.CharField(widget=forms.HiddenInput)

    @staticmethod
    def encode(changes: list[PlannedChange]) -> str:
        return ";".join(f"{change.topic},{change.partition},{change.new_offset}" for change in changes)

    def clean_plan(self) -> dict[tuple[str, int], int]:
        # Topic names contain neither commas nor semicolons, so the plan splits unambiguously.
        offsets: dict[tuple[str, int], int] = {}
        for line in filter(None, (entry.strip() for entry in self.cleaned_data["plan"].split(";"))):
            try:
                topic, partition, offset = line.split(",")
                key, value = (topic, int(partition)), int(offset)
            except ValueError:
                raise forms.ValidationError(f"The plan entry {line!r} is not topic,partition,offset.") from None
            if not topic or key[1] < 0 or value < 0:
                raise forms.ValidationError(f"The plan entry {line!r} is not topic,partition,offset.")
            offsets[key] = value
        if not offsets:
            raise forms.ValidationError("The plan is empty.")
        return offsets

    def reset_request(self) -> ResetRequest:
        return ResetRequest(to="offsets", offsets=self.cleaned_data["plan"])
