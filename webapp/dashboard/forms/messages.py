"""Forms of the message browser (scan a topic's partitions with filters) and the produce form (write one record)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from django import forms

from webapp.accounts.facade import Tenant
from webapp.dashboard.data_plane import MAX_BROWSE_RECORDS, ScanStart
from webapp.dashboard.record_rendering import FORMAT_CHOICES, Format
from webapp.dashboard.record_scan import MAX_JSON_PATH_LENGTH, InvalidFilter, JsonPath, Order, RecordFilter, parse_expected_json
from webapp.schemas.facade import EncodingError, RegistryError, encode, live_versions

START_CHOICES = [
    ("latest", "Newest first"),
    ("beginning", "From the beginning"),
    ("offset", "From an offset"),
    ("timestamp", "From a time"),
    ("end", "From the end (live tail only)"),
]
ORDER_CHOICES = [(Order.TIMESTAMP.value, "Interleaved by timestamp"), (Order.PARTITION.value, "Partition by partition")]
ZONE_CHOICES = [("utc", "UTC"), ("local", "my browser's time zone")]
LIMIT_CHOICES = [(count, str(count)) for count in (10, 25, 50, 100, 250, 500) if count <= MAX_BROWSE_RECORDS]
TIME_INPUT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
# The most minutes a browser's time zone lies from UTC (UTC-12 to UTC+14, with room).
MAX_UTC_OFFSET_MINUTES = 16 * 60


def _time_field(help_text: str) -> forms.DateTimeField:
    return forms.DateTimeField(
        required=False, input_formats=TIME_INPUT_FORMATS, widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}), help_text=help_text
    )


def parse_partitions(text: str, partition_count: int) -> list[int]:
    """``"0, 2"`` or ``"1-3"`` -> partition numbers; empty -> every partition. Raises
    ``ValidationError`` naming a partition the topic does not have."""
    if not text.strip():
        return list(range(partition_count))
    chosen: set[int] = set()
    for part in text.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise forms.ValidationError(f"{part!r} is not a partition number or range (for example 0,2 or 1-3).")
        numbers = range(int(low), int(high if dash else low) + 1)
        missing = [number for number in (numbers.start, numbers.stop - 1) if number >= partition_count]
        if missing or not numbers:
            shown = part if not missing else str(missing[0])
            raise forms.ValidationError(
                f"Partition {shown} does not exist: the topic has {partition_count} partition{'s' if partition_count != 1 else ''} (0 to {partition_count - 1})."
            )
        chosen.update(numbers)
    return sorted(chosen)


def parse_offsets(text: str, partitions: list[int]) -> dict[int, int]:
    """``"120"`` (every chosen partition) or ``"0:120, 1:95"`` -> offset per partition (the
    others start at their beginning). Raises ``ValidationError``."""
    text = text.replace(" ", "")
    if text.isdigit():
        return dict.fromkeys(partitions, int(text))
    offsets: dict[int, int] = {}
    for part in text.split(","):
        partition, colon, offset = part.partition(":")
        if not (colon and partition.isdigit() and offset.isdigit()):
            raise forms.ValidationError(f"{part!r} is not an offset or partition:offset (for example 120 or 0:120,1:95).")
        if int(partition) not in partitions:
            raise forms.ValidationError(f"Partition {partition} is not among the partitions read.")
        offsets[int(partition)] = int(offset)
    return offsets


class BrowseForm(forms.Form):
    """GET parameters of the browser (see ``webapp.dashboard.record_scan``); partitions are
    checked against the topic's ``partition_count``. Times are read in UTC, or in the
    browser's zone when ``zone`` says so (the page's script sends ``utc_offset``, minutes
    east of UTC)."""

    partition = forms.CharField(required=False, label="Partitions", help_text="Empty: all. For example 0,2 or 1-3.")
    start = forms.ChoiceField(choices=START_CHOICES, initial="latest", required=False)
    offset = forms.CharField(required=False, help_text="With “From an offset”: 120, or 0:120,1:95 per partition.")
    timestamp = _time_field("With “From a time”.")
    zone = forms.ChoiceField(choices=ZONE_CHOICES, initial="utc", required=False, label="Times are in")
    utc_offset = forms.IntegerField(required=False, min_value=-MAX_UTC_OFFSET_MINUTES, max_value=MAX_UTC_OFFSET_MINUTES, widget=forms.HiddenInput)
    key = forms.CharField(required=False, strip=False, label="Key contains")
    value = forms.CharField(required=False, strip=False, label="Value contains")
    json_path = forms.CharField(required=False, label="JSON path", max_length=MAX_JSON_PATH_LENGTH, help_text="For example $.order.status")
    json_equals = forms.CharField(required=False, label="equals", help_text='A JSON value (42, true, "x") or text; empty: the path exists.')
    header = forms.CharField(required=False, label="Header", help_text="name, or name: part of its value")
    time_from = _time_field("From this time on (included).")
    time_to = _time_field("Up to this time (not included).")
    order = forms.ChoiceField(choices=ORDER_CHOICES, initial=Order.TIMESTAMP.value, required=False, label="Order")
    limit = forms.TypedChoiceField(coerce=int, choices=LIMIT_CHOICES, initial=25, required=False, empty_value=25, label="Records")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial=Format.AUTO.value, required=False, label="Show as")
    # Choices a query string may leave out (a link, a live-tail poll): their initial value.
    DEFAULTED = ("start", "zone", "order", "format")

    # The page's groups of fields, in order.
    FIELDSETS = (
        ("Where", ("partition", "start", "offset", "timestamp", "zone")),
        ("Filters", ("key", "value", "json_path", "json_equals", "header", "time_from", "time_to")),
        ("Show", ("order", "limit", "format")),
    )

    def __init__(self, *args: object, partition_count: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.partition_count = partition_count

    def fieldsets(self) -> list[tuple[str, list[forms.BoundField]]]:
        return [(legend, [self[name] for name in names]) for legend, names in self.FIELDSETS]

    def clean_partition(self) -> list[int]:
        return parse_partitions(self.cleaned_data["partition"], self.partition_count)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        for name in self.DEFAULTED:
            if name in data and not data[name]:
                data[name] = self.fields[name].initial
        start = data.get("start")
        if start == "offset":
            if not (data.get("offset") or "").strip():
                self.add_error("offset", "Give the offset to start from.")
            elif "partition" in data:
                try:
                    data["offsets"] = parse_offsets(data["offset"], data["partition"])
                except forms.ValidationError as error:
                    self.add_error("offset", error)
        if start == "timestamp" and data.get("timestamp") is None:
            self.add_error("timestamp", "Give the time to start from.")
        if data.get("zone") == "local" and data.get("utc_offset") is None:
            self.add_error("zone", "Your browser did not send its time zone (is JavaScript off?): give times in UTC.")
        if data.get("json_equals") and not data.get("json_path"):
            self.add_error("json_equals", "Give the JSON path whose value must equal this.")
        if data.get("json_path"):
            try:
                data["parsed_json_path"] = JsonPath.parse(data["json_path"])
            except InvalidFilter as error:
                self.add_error("json_path", error.message)
        header = data.get("header") or ""
        if header and not header.partition(":")[0].strip():
            self.add_error("header", "Give the header's name before the colon.")
        if data.get("time_from") and data.get("time_to") and data["time_from"] >= data["time_to"]:
            self.add_error("time_to", "The end of the time range must come after its start.")
        return data

    def epoch_ms(self, moment: datetime) -> int:
        """A time of the form as epoch milliseconds, in the zone the form names."""
        data = self.cleaned_data
        # The input's wall-clock time (Django made it aware in the server's zone: replaced).
        zone = UTC if data["zone"] == "utc" else timezone(timedelta(minutes=data["utc_offset"]))
        return int(moment.replace(tzinfo=zone).timestamp() * 1000)

    def partitions(self) -> list[int]:
        return list(self.cleaned_data["partition"])

    def scan_start(self) -> ScanStart:
        data = self.cleaned_data
        if data["start"] == "offset":
            return ScanStart("offset", offsets=data["offsets"])
        if data["start"] == "timestamp":
            return ScanStart("timestamp", timestamp_ms=self.epoch_ms(data["timestamp"]))
        if data["start"] == "latest":
            return ScanStart("newest")
        return ScanStart(data["start"])

    def record_filter(self) -> RecordFilter:
        data = self.cleaned_data
        name, _, value = (data["header"] or "").partition(":")
        return RecordFilter(
            key_contains=data["key"],
            value_contains=data["value"],
            json_path=data.get("parsed_json_path"),
            json_equals=parse_expected_json(data["json_equals"]) if data["json_equals"] else RecordFilter().json_equals,
            header_name=name.strip(),
            header_value=value.strip(),
            time_from_ms=self.epoch_ms(data["time_from"]) if data["time_from"] else None,
            time_to_ms=self.epoch_ms(data["time_to"]) if data["time_to"] else None,
        )


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

    key_schema = forms.ChoiceField(required=False, choices=(), label="Encode the key with", help_text="A schema's version: type the key as JSON.")
    value_schema = forms.ChoiceField(required=False, choices=(), label="Encode the value with", help_text="A schema's version: type the value as JSON.")

    def __init__(self, *args: object, partition_count: int, tenant: Tenant | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["partition"].choices = [("", "by key")] + [(index, str(index)) for index in range(partition_count)]  # type: ignore[attr-defined]
        self.tenant = tenant
        choices = [("", "nothing: send the text as typed")] + schema_choices(tenant) if tenant is not None else [("", "nothing")]
        for name in ("key_schema", "value_schema"):
            self.fields[name].choices = choices  # type: ignore[attr-defined]

    def clean_headers(self) -> list[tuple[str, bytes]]:
        return parse_header_lines(self.cleaned_data["headers"])

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        for field, schema_field in (("key", "key_schema"), ("value", "value_schema")):
            chosen = data.get(schema_field)
            if not chosen or field not in data or (field == "value" and data.get("null_value")):
                continue
            subject, _, version = str(chosen).rpartition("/")
            try:
                data[f"encoded_{field}"] = encode(self.tenant, subject, int(version), str(data[field]))  # type: ignore[arg-type]
            except EncodingError as error:
                self.add_error(field, f"The {field} does not fit {subject} version {version}: {error.message}")
            except RegistryError as error:
                self.add_error(schema_field, error.message)
        return data

    def record_key(self) -> bytes | None:
        if "encoded_key" in self.cleaned_data:
            return bytes(self.cleaned_data["encoded_key"])
        key = self.cleaned_data["key"]
        return key.encode("utf-8") if key else None

    def record_value(self) -> bytes | None:
        if self.cleaned_data["null_value"]:
            return None
        if "encoded_value" in self.cleaned_data:
            return bytes(self.cleaned_data["encoded_value"])
        # Browsers submit textarea line breaks as CRLF; the user typed plain line breaks.
        return self.cleaned_data["value"].replace("\r\n", "\n").encode("utf-8")


def schema_choices(tenant: Tenant) -> list[tuple[str, str]]:
    """Every live version of the tenant's subjects, as ``subject/version``."""
    return [(f"{subject}/{row.version}", f"{subject} v{row.version} ({row.schema_type}, id {row.schema_id})") for subject, row in live_versions(tenant)]
