"""Forms of the message browser (read a partition) and the produce form (write one record)."""

from __future__ import annotations

from datetime import UTC

from django import forms

from webapp.dashboard.data_plane import MAX_BROWSE_RECORDS, StartAt
from webapp.dashboard.record_rendering import FORMAT_CHOICES, Format

START_CHOICES = [("latest", "Latest records"), ("offset", "From an offset"), ("timestamp", "From a time (UTC)")]
LIMIT_CHOICES = [(count, str(count)) for count in (10, 25, 50, 100, 250) if count <= MAX_BROWSE_RECORDS]


class BrowseForm(forms.Form):
    """GET parameters of the browser; ``partition`` choices come from the topic."""

    partition = forms.TypedChoiceField(coerce=int, choices=())
    start = forms.ChoiceField(choices=START_CHOICES, initial="latest")
    offset = forms.IntegerField(min_value=0, required=False, help_text="With “From an offset”.")
    timestamp = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}),
        help_text="With “From a time”, in UTC.",
    )
    limit = forms.TypedChoiceField(coerce=int, choices=LIMIT_CHOICES, initial=25, label="Records")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial=Format.TEXT.value, label="Show as")

    def __init__(self, *args: object, partition_count: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["partition"].choices = [(index, str(index)) for index in range(partition_count)]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("start") == "offset" and data.get("offset") is None:
            self.add_error("offset", "Give the offset to start from.")
        if data.get("start") == "timestamp" and data.get("timestamp") is None:
            self.add_error("timestamp", "Give the time to start from.")
        return data

    def start_at(self) -> StartAt:
        data = self.cleaned_data
        if data["start"] == "offset":
            return StartAt("offset", data["offset"])
        if data["start"] == "timestamp":
            # datetime-local carries no zone: the form says UTC, so read it as UTC.
            moment = data["timestamp"].replace(tzinfo=UTC) if data["timestamp"].tzinfo is None else data["timestamp"]
            return StartAt("timestamp", int(moment.timestamp() * 1000))
        return StartAt("latest")


def parse_header_lines(text: str) -> list[tuple[str, bytes]]:
    """``name: value`` lines -> headers (UTF-8 values, names may repeat as Kafka allows)."""
    headers = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        name, separator, value = raw.partition(":")
        if not separator or not name.strip():
            raise forms.ValidationError(f"Header line {number} is not name: value.")
        headers.append((name.strip(), value.strip().encode("utf-8")))
    return headers


class ProduceForm(forms.Form):
    partition = forms.TypedChoiceField(coerce=int, choices=(), required=False, empty_value=None, help_text="Empty: chosen from the key, as producers do.")
    key = forms.CharField(required=False, strip=False, help_text="Empty: a record without a key.")
    value = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 6}))
    null_value = forms.BooleanField(required=False, label="Null value (a tombstone for compacted topics)")
    headers = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3, "placeholder": "content-type: application/json"}), help_text="One name: value per line."
    )

    def __init__(self, *args: object, partition_count: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["partition"].choices = [("", "by key")] + [(index, str(index)) for index in range(partition_count)]  # type: ignore[attr-defined]

    def clean_headers(self) -> list[tuple[str, bytes]]:
        return parse_header_lines(self.cleaned_data["headers"])

    def record_key(self) -> bytes | None:
        key = self.cleaned_data["key"]
        return key.encode("utf-8") if key else None

    def record_value(self) -> bytes | None:
        if self.cleaned_data["null_value"]:
            return None
        # Browsers submit textarea line breaks as CRLF; the user typed plain line breaks.
        return self.cleaned_data["value"].replace("\r\n", "\n").encode("utf-8")
