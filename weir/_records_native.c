/* weir._records_native: the per-record loops of weir/records.py and of the broker's batch
 * validation (broker_nodes/storage/batch_validation.py) in C.
 *
 * The pure-Python functions are the reference: every function here gives the same values, the
 * same bytes and the same errors (same message, same position) on every input, which the
 * property tests in tests/weir/test_records_native.py check on random and corrupt records.
 * Where the Python path would produce integers outside int64 (a ten-byte varint whose last
 * byte carries more than one bit, offsets that overflow), a function returns None and the
 * caller runs the Python path instead: those inputs are corrupt and rare, and exactness wins.
 *
 * Every loop is bounded by the buffer's length: each step reads at least one byte or stops.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <structmember.h>

static PyObject *RecordFormatError = NULL; /* weir.records.RecordFormatError, given by init() */

enum { V_OK = 0, V_END, V_LONG, V_WIDE };

/* weir.records.decode_varint: a zig-zag varint at *pos. V_END: the buffer ends inside it (Python's
 * IndexError); V_LONG: longer than 10 bytes (*pos is then the position the Python error names);
 * V_WIDE: a value outside int64, left to the Python path. */
static int
read_varint(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, int64_t *out)
{
    uint64_t result = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift <= 63; shift += 7) {
        if (p >= end) {
            return V_END;
        }
        uint8_t byte = data[p++];
        if (shift == 63) {
            if (byte & 0x80) {
                *pos = p;
                return V_LONG;
            }
            if (byte & 0x7E) {
                return V_WIDE;
            }
        }
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *pos = p;
            *out = (int64_t)((result >> 1) ^ (uint64_t)(-(int64_t)(result & 1)));
            return V_OK;
        }
    }
    return V_LONG; /* not reached */
}

/* ------------------------------------------------------------------ broker: walk_records */

static PyObject *
problem(PyObject *reason, long long index, int corrupt)
{
    if (reason == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NLO)", reason, index, corrupt ? Py_True : Py_False);
    return result;
}

static PyObject *
signed_difference(long long difference)
{
    /* Python's f"{difference:+d}" */
    return difference >= 0 ? PyUnicode_FromFormat("+%lld", difference) : PyUnicode_FromFormat("%lld", difference);
}

static int
is_utf8(const uint8_t *data, Py_ssize_t length, int *valid)
{
    PyObject *text = PyUnicode_DecodeUTF8((const char *)data, length, NULL);
    if (text != NULL) {
        Py_DECREF(text);
        *valid = 1;
        return 0;
    }
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        *valid = 0;
        return 0;
    }
    return -1;
}

/* walk_records(data, records_count, require_keys) -> (min_delta, max_delta) when the records
 * parse; (reason, record_index, corrupt) for the first problem, as batch_validation's
 * _RecordsProblem; None when the Python path must decide (integers beyond int64). */
static PyObject *
walk_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long records_count;
    int require_keys;
    if (!PyArg_ParseTuple(args, "y*Lp", &view, &records_count, &require_keys)) {
        return NULL;
    }
    const uint8_t *data = view.buf;
    const Py_ssize_t end = view.len;
    Py_ssize_t pos = 0;
    int64_t min_delta = INT64_MAX, max_delta = INT64_MIN;
    long long index = 0;
    PyObject *result = NULL;
    int rc;

#define WALK_VARINT(target)                                  \
    do {                                                     \
        rc = read_varint(data, end, &pos, &(target));        \
        if (rc == V_WIDE) {                                  \
            goto wide;                                       \
        }                                                    \
        if (rc != V_OK) {                                    \
            goto ends_inside;                                \
        }                                                    \
    } while (0)

    while (index < records_count) {
        if (pos >= end) {
            result = problem(PyUnicode_FromFormat("the header says %lld records but the records section holds %lld", records_count, index), index, 0);
            goto done;
        }
        int64_t length, delta, offset_delta, key_length, value_length;
        WALK_VARINT(length);
        if (length <= 0 || length > end - pos) {
            result = problem(PyUnicode_FromFormat("record length %lld runs past the end of the records section", (long long)length), index, 1);
            goto done;
        }
        const Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* record attributes */
        WALK_VARINT(delta);
        if (delta < min_delta) {
            min_delta = delta;
        }
        if (delta > max_delta) {
            max_delta = delta;
        }
        WALK_VARINT(offset_delta);
        if (offset_delta != index) {
            result = problem(PyUnicode_FromFormat("offset delta %lld where %lld was expected", (long long)offset_delta, index), index, 0);
            goto done;
        }
        WALK_VARINT(key_length);
        if (key_length < 0) {
            if (key_length != -1) {
                result = problem(PyUnicode_FromFormat("negative key length %lld", (long long)key_length), index, 1);
                goto done;
            }
            if (require_keys) {
                result = problem(PyUnicode_FromString("a compacted topic cannot accept a record without a key"), index, 0);
                goto done;
            }
        }
        else {
            if (key_length >= end - pos) {
                goto ends_inside; /* the value's length cannot be read */
            }
            pos += (Py_ssize_t)key_length;
        }
        WALK_VARINT(value_length);
        if (value_length < -1) {
            result = problem(PyUnicode_FromFormat("negative value length %lld", (long long)value_length), index, 1);
            goto done;
        }
        if (value_length > 0) {
            if (value_length >= end - pos) {
                goto ends_inside; /* the header count cannot be read */
            }
            pos += (Py_ssize_t)value_length;
        }
        if (pos >= end) {
            goto ends_inside;
        }
        if (data[pos] == 0) {
            pos += 1;
        }
        else {
            int64_t count;
            WALK_VARINT(count);
            if (count < 0 || count > record_end - pos) {
                result = problem(PyUnicode_FromFormat("header count %lld does not fit the record", (long long)count), index, 1);
                goto done;
            }
            for (int64_t header = 0; header < count; header++) {
                int64_t header_key_length, header_value_length;
                WALK_VARINT(header_key_length);
                if (header_key_length < 0 || header_key_length > record_end - pos) {
                    result = problem(PyUnicode_FromFormat("header key length %lld does not fit the record", (long long)header_key_length), index, 1);
                    goto done;
                }
                int valid;
                if (is_utf8(data + pos, (Py_ssize_t)header_key_length, &valid) < 0) {
                    goto done;
                }
                if (!valid) {
                    result = problem(PyUnicode_FromString("a header key is not UTF-8"), index, 0);
                    goto done;
                }
                pos += (Py_ssize_t)header_key_length;
                WALK_VARINT(header_value_length);
                if (header_value_length < -1 || (header_value_length > 0 && header_value_length > record_end - pos)) {
                    result = problem(PyUnicode_FromFormat("header value length %lld does not fit the record", (long long)header_value_length), index, 1);
                    goto done;
                }
                if (header_value_length > 0) {
                    pos += (Py_ssize_t)header_value_length;
                }
            }
        }
        if (pos != record_end) {
            PyObject *difference = signed_difference((long long)(pos - record_end));
            if (difference == NULL) {
                goto done;
            }
            result = problem(PyUnicode_FromFormat("record length %lld disagrees with its fields (%U bytes)", (long long)length, difference), index, 1);
            Py_DECREF(difference);
            goto done;
        }
        index++;
    }
    if (pos != end) {
        result = problem(PyUnicode_FromFormat("%lld bytes follow the last of the %lld records the header announces", (long long)(end - pos), records_count), records_count - 1, 0);
        goto done;
    }
    result = Py_BuildValue("(LL)", (long long)min_delta, (long long)max_delta);
    goto done;
ends_inside:
    result = problem(PyUnicode_FromString("the records section ends inside a record"), index, 1);
    goto done;
wide:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return result;
#undef WALK_VARINT
}

/* ------------------------------------------------------------------ consumer: decode_records */

static PyObject *
format_error(const char *reason, Py_ssize_t position)
{
    if (RecordFormatError == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "weir._records_native.init() was not called");
        return NULL;
    }
    PyObject *error = PyObject_CallFunction(RecordFormatError, "sn", reason, position);
    if (error != NULL) {
        PyErr_SetObject(RecordFormatError, error);
        Py_DECREF(error);
    }
    return NULL;
}

/* One varint of decode_records' per-record loop, as the Python path reads it: one-byte and
 * two-byte forms inline (signed or, where Python skips the zig-zag sign, unsigned), longer
 * ones through decode_varint. Returns V_OK, V_END, V_LONG (a RecordFormatError at *pos) or V_WIDE. */
static int
read_field(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, int64_t *out, int one_signed, int two_signed)
{
    Py_ssize_t p = *pos;
    if (p >= end) {
        return V_END;
    }
    uint8_t byte = data[p];
    if (byte < 0x80) {
        *out = one_signed ? (int64_t)((byte >> 1) ^ -(byte & 1)) : (int64_t)(byte >> 1);
        *pos = p + 1;
        return V_OK;
    }
    if (p + 1 >= end) {
        return V_END;
    }
    if (data[p + 1] < 0x80) {
        int64_t raw = (int64_t)((byte & 0x7F) | (data[p + 1] << 7));
        *out = two_signed ? ((raw >> 1) ^ -(raw & 1)) : (raw >> 1);
        *pos = p + 2;
        return V_OK;
    }
    return read_varint(data, end, pos, out);
}

static PyObject *
decode_headers(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, int *wide)
{
    int64_t count;
    int rc = read_varint(data, end, pos, &count);
    if (rc == V_WIDE) {
        *wide = 1;
        return NULL;
    }
    if (rc == V_LONG) {
        return format_error("varint is longer than 10 bytes", *pos);
    }
    if (rc == V_END) {
        return format_error("records section ends inside a record", 0);
    }
    PyObject *headers = PyList_New(0);
    if (headers == NULL) {
        return NULL;
    }
    for (int64_t index = 0; index < count; index++) { /* each header reads two bytes at least */
        int64_t key_length, value_length;
        rc = read_varint(data, end, pos, &key_length);
        if (rc != V_OK) {
            goto varint_error;
        }
        if (key_length < 0) {
            PyObject *reason = PyUnicode_FromFormat("negative header key length %lld", (long long)key_length);
            if (reason != NULL) {
                format_error(PyUnicode_AsUTF8(reason), 0);
                Py_DECREF(reason);
            }
            goto fail;
        }
        Py_ssize_t available = end - *pos;
        Py_ssize_t taken = key_length < available ? (Py_ssize_t)key_length : available;
        PyObject *key = PyUnicode_DecodeUTF8((const char *)data + *pos, taken, NULL);
        if (key == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                format_error("a header key is not UTF-8", 0);
            }
            goto fail;
        }
        if (key_length > available) {
            Py_DECREF(key);
            rc = V_END; /* the value's length cannot be read */
            goto varint_error;
        }
        *pos += taken;
        rc = read_varint(data, end, pos, &value_length);
        if (rc != V_OK) {
            Py_DECREF(key);
            goto varint_error;
        }
        PyObject *value;
        if (value_length < -1) {
            Py_DECREF(key);
            PyObject *reason = PyUnicode_FromFormat("negative header value length %lld", (long long)value_length);
            if (reason != NULL) {
                format_error(PyUnicode_AsUTF8(reason), 0);
                Py_DECREF(reason);
            }
            goto fail;
        }
        if (value_length == -1) {
            value = Py_NewRef(Py_None);
        }
        else {
            available = end - *pos;
            taken = value_length < available ? (Py_ssize_t)value_length : available;
            value = PyBytes_FromStringAndSize((const char *)data + *pos, taken);
            if (value_length > available) {
                /* Python's position runs past the end; the caller's length check names it.
                 * Past PY_SSIZE_T_MAX only the Python path can count. */
                if (value_length - available > PY_SSIZE_T_MAX / 2 - end) {
                    Py_XDECREF(value);
                    Py_DECREF(key);
                    *wide = 1;
                    goto fail;
                }
                taken = (Py_ssize_t)value_length;
            }
            *pos += taken;
        }
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL || PyList_Append(headers, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
        if (*pos > end && index + 1 < count) {
            rc = V_END; /* the next header's key length cannot be read */
            goto varint_error;
        }
    }
    PyObject *result = PyList_AsTuple(headers);
    Py_DECREF(headers);
    return result;
varint_error:
    if (rc == V_WIDE) {
        *wide = 1;
    }
    else if (rc == V_LONG) {
        format_error("varint is longer than 10 bytes", *pos);
    }
    else {
        format_error("records section ends inside a record", 0);
    }
fail:
    Py_DECREF(headers);
    return NULL;
}

/* ------------------------------------------------------------------ consumer: Message construction */

/* weir.message.Message is a Python class with __slots__; decode_messages fills its slots directly
 * (as its __init__ would, without running Python per record). init_message() reads each slot's
 * offset from the class's member descriptors and checks the layout it relies on. */
enum {
    M_TOPIC,
    M_PARTITION,
    M_OFFSET,
    M_TIMESTAMP,
    M_KEY,
    M_VALUE,
    M_HEADERS,
    M_TIMESTAMP_TYPE,
    M_ERROR,
    M_LATENCY,
    M_LEADER_EPOCH,
    M_SLOTS
};
static const char *const message_slot_names[M_SLOTS] = {
    "_topic", "_partition", "_offset", "_timestamp", "_key", "_value", "_headers", "_timestamp_type", "_error", "_latency", "_leader_epoch",
};
static PyTypeObject *MessageType = NULL;
static Py_ssize_t message_slot_offsets[M_SLOTS];

static PyObject *
init_message(PyObject *self, PyObject *message_class)
{
    if (!PyType_Check(message_class)) {
        PyErr_SetString(PyExc_TypeError, "init_message() takes the Message class");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)message_class;
    if (type->tp_dictoffset != 0 || type->tp_itemsize != 0 || type->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "init_message(): Message must have __slots__ and no __dict__");
        return NULL;
    }
    Py_ssize_t offsets[M_SLOTS];
    for (int slot = 0; slot < M_SLOTS; slot++) {
        PyObject *descriptor = PyDict_GetItemString(type->tp_dict, message_slot_names[slot]); /* borrowed */
        if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "init_message(): Message has no slot %s", message_slot_names[slot]);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        if (member->type != T_OBJECT_EX || member->offset <= 0 || member->offset + (Py_ssize_t)sizeof(PyObject *) > type->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "init_message(): slot %s is not an object slot", message_slot_names[slot]);
            return NULL;
        }
        offsets[slot] = member->offset;
    }
    memcpy(message_slot_offsets, offsets, sizeof(offsets));
    Py_XSETREF(MessageType, (PyTypeObject *)Py_NewRef(message_class));
    Py_RETURN_NONE;
}

/* A new Message: each value is a new reference that the Message takes over (NULL fails). */
static PyObject *
new_message(PyObject *const values[M_SLOTS])
{
    PyObject *message = MessageType->tp_alloc(MessageType, 0);
    if (message == NULL) {
        return NULL;
    }
    for (int slot = 0; slot < M_SLOTS; slot++) {
        *(PyObject **)((char *)message + message_slot_offsets[slot]) = values[slot];
    }
    return message;
}

/* decode_records(data, records_count, base_offset, base_timestamp, max_timestamp, log_append,
 * min_offset) -> list of (offset, timestamp, key, value, headers), as weir.records.decode_records;
 * None when the Python path must decide. */
/* The fields every Message of one batch shares (decode_messages), or NULL for tuples (decode_records). */
typedef struct {
    PyObject *topic, *partition, *timestamp_type, *leader_epoch;
} MessageFields;

static PyObject *decode_section(Py_buffer *view, long long records_count, long long base_offset, long long base_timestamp, long long max_timestamp, int log_append,
                                long long min_offset, const MessageFields *fields);

static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long records_count, base_offset, base_timestamp, max_timestamp, min_offset;
    int log_append;
    if (!PyArg_ParseTuple(args, "y*LLLLpL", &view, &records_count, &base_offset, &base_timestamp, &max_timestamp, &log_append, &min_offset)) {
        return NULL;
    }
    return decode_section(&view, records_count, base_offset, base_timestamp, max_timestamp, log_append, min_offset, NULL);
}

/* decode_messages(data, records_count, base_offset, base_timestamp, max_timestamp, log_append,
 * min_offset, topic, partition, timestamp_type, leader_epoch) -> list of weir.message.Message, as
 * weir.message.decode_messages builds them from decode_records' tuples; None when the Python path
 * must decide. */
static PyObject *
decode_messages(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long records_count, base_offset, base_timestamp, max_timestamp, min_offset;
    int log_append;
    MessageFields fields;
    if (!PyArg_ParseTuple(args, "y*LLLLpLOOOO", &view, &records_count, &base_offset, &base_timestamp, &max_timestamp, &log_append, &min_offset, &fields.topic,
                          &fields.partition, &fields.timestamp_type, &fields.leader_epoch)) {
        return NULL;
    }
    if (MessageType == NULL) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "weir._records_native.init_message() was not called");
        return NULL;
    }
    return decode_section(&view, records_count, base_offset, base_timestamp, max_timestamp, log_append, min_offset, &fields);
}

/* The records section in view (released here) as tuples, or as Messages when fields is given. */
static PyObject *
decode_section(Py_buffer *view, long long records_count, long long base_offset, long long base_timestamp, long long max_timestamp, int log_append,
               long long min_offset, const MessageFields *fields)
{
    const uint8_t *data = view->buf;
    const Py_ssize_t end = view->len;
    Py_ssize_t pos = 0;
    int rc, wide = 0;
    /* Records of one batch mostly share their timestamp: one int object serves a run of them. */
    long long last_timestamp = 0;
    PyObject *last_timestamp_object = NULL;
    PyObject *out = PyList_New(0);
    PyObject *empty = PyTuple_New(0);
    if (out == NULL || empty == NULL) {
        goto fail;
    }

#define FIELD(target, one_signed, two_signed)                                     \
    do {                                                                          \
        rc = read_field(data, end, &pos, &(target), (one_signed), (two_signed)); \
        if (rc != V_OK) {                                                         \
            goto varint_error;                                                    \
        }                                                                         \
    } while (0)

    for (long long index = 0; index < records_count; index++) {
        int64_t length, timestamp_delta, offset_delta, key_length, value_length;
        FIELD(length, 1, 0);
        if (length < 0 || length > end - pos) {
            PyObject *reason = PyUnicode_FromFormat("record of %lld bytes runs past the end of the batch", (long long)length);
            if (reason != NULL) {
                format_error(PyUnicode_AsUTF8(reason), 0);
                Py_DECREF(reason);
            }
            goto fail;
        }
        const Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* record attributes */
        FIELD(timestamp_delta, 1, 1);
        FIELD(offset_delta, 0, 0);
        PyObject *key, *value, *headers;
        if (pos >= end) {
            goto ends_inside;
        }
        if (data[pos] == 1) {
            key = Py_NewRef(Py_None);
            pos += 1;
        }
        else {
            FIELD(key_length, 0, 0);
            if (key_length < 0) {
                PyObject *reason = PyUnicode_FromFormat("negative key length %lld", (long long)key_length);
                if (reason != NULL) {
                    format_error(PyUnicode_AsUTF8(reason), 0);
                    Py_DECREF(reason);
                }
                goto fail;
            }
            if (key_length >= end - pos) {
                goto ends_inside; /* the value's length cannot be read */
            }
            key = PyBytes_FromStringAndSize((const char *)data + pos, (Py_ssize_t)key_length);
            if (key == NULL) {
                goto fail;
            }
            pos += (Py_ssize_t)key_length;
        }
        if (pos >= end) {
            Py_DECREF(key);
            goto ends_inside;
        }
        if (data[pos] == 1) {
            value = Py_NewRef(Py_None);
            pos += 1;
        }
        else {
            rc = read_field(data, end, &pos, &value_length, 0, 0);
            if (rc != V_OK) {
                Py_DECREF(key);
                goto varint_error;
            }
            if (value_length < 0) {
                Py_DECREF(key);
                PyObject *reason = PyUnicode_FromFormat("negative value length %lld", (long long)value_length);
                if (reason != NULL) {
                    format_error(PyUnicode_AsUTF8(reason), 0);
                    Py_DECREF(reason);
                }
                goto fail;
            }
            if (value_length >= end - pos) {
                Py_DECREF(key);
                goto ends_inside; /* the header count cannot be read */
            }
            value = PyBytes_FromStringAndSize((const char *)data + pos, (Py_ssize_t)value_length);
            if (value == NULL) {
                Py_DECREF(key);
                goto fail;
            }
            pos += (Py_ssize_t)value_length;
        }
        if (pos >= end) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto ends_inside;
        }
        if (data[pos] == 0) {
            headers = Py_NewRef(empty);
            pos += 1;
        }
        else {
            headers = decode_headers(data, end, &pos, &wide);
            if (headers == NULL) {
                Py_DECREF(key);
                Py_DECREF(value);
                goto fail;
            }
        }
        if (pos != record_end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            PyObject *difference = signed_difference((long long)(pos - record_end));
            if (difference == NULL) {
                goto fail;
            }
            PyObject *reason = PyUnicode_FromFormat("record length %lld disagrees with its fields (%U bytes)", (long long)length, difference);
            Py_DECREF(difference);
            if (reason != NULL) {
                format_error(PyUnicode_AsUTF8(reason), 0);
                Py_DECREF(reason);
            }
            goto fail;
        }
        long long offset, timestamp;
        if (__builtin_add_overflow(base_offset, (long long)offset_delta, &offset) ||
            __builtin_add_overflow(base_timestamp, (long long)timestamp_delta, &timestamp)) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            wide = 1;
            goto fail;
        }
        if (offset < min_offset) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            continue;
        }
        long long record_timestamp = log_append ? max_timestamp : timestamp;
        if (last_timestamp_object == NULL || record_timestamp != last_timestamp) {
            Py_XSETREF(last_timestamp_object, PyLong_FromLongLong(record_timestamp));
            last_timestamp = record_timestamp;
        }
        PyObject *offset_object = PyLong_FromLongLong(offset);
        if (offset_object == NULL || last_timestamp_object == NULL) {
            Py_XDECREF(offset_object);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail;
        }
        PyObject *record;
        if (fields != NULL) {
            PyObject *const values[M_SLOTS] = {
                [M_TOPIC] = Py_NewRef(fields->topic),
                [M_PARTITION] = Py_NewRef(fields->partition),
                [M_OFFSET] = offset_object,
                [M_TIMESTAMP] = Py_NewRef(last_timestamp_object),
                [M_KEY] = key,
                [M_VALUE] = value,
                [M_HEADERS] = headers,
                [M_TIMESTAMP_TYPE] = Py_NewRef(fields->timestamp_type),
                [M_ERROR] = Py_NewRef(Py_None),
                [M_LATENCY] = Py_NewRef(Py_None),
                [M_LEADER_EPOCH] = Py_NewRef(fields->leader_epoch),
            };
            record = new_message(values);
            if (record == NULL) {
                for (int slot = 0; slot < M_SLOTS; slot++) {
                    Py_DECREF(values[slot]);
                }
                goto fail;
            }
        }
        else {
            record = PyTuple_New(5);
            if (record == NULL) {
                Py_DECREF(offset_object);
                Py_DECREF(key);
                Py_DECREF(value);
                Py_DECREF(headers);
                goto fail;
            }
            PyTuple_SET_ITEM(record, 0, offset_object); /* each steals its reference */
            PyTuple_SET_ITEM(record, 1, Py_NewRef(last_timestamp_object));
            PyTuple_SET_ITEM(record, 2, key);
            PyTuple_SET_ITEM(record, 3, value);
            PyTuple_SET_ITEM(record, 4, headers);
        }
        int appended = PyList_Append(out, record);
        Py_DECREF(record);
        if (appended < 0) {
            goto fail;
        }
    }
    Py_DECREF(empty);
    Py_XDECREF(last_timestamp_object);
    PyBuffer_Release(view);
    return out;
varint_error:
    if (rc == V_WIDE) {
        wide = 1;
    }
    else if (rc == V_LONG) {
        format_error("varint is longer than 10 bytes", pos);
    }
    else {
    ends_inside:
        format_error("records section ends inside a record", 0);
    }
fail:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    Py_XDECREF(last_timestamp_object);
    PyBuffer_Release(view);
    if (wide) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return NULL;
#undef FIELD
}

/* ------------------------------------------------------------------ producer: encode_record */

static inline Py_ssize_t
varint_size(int64_t value)
{
    uint64_t raw = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    Py_ssize_t size = 1;
    while (raw >= 0x80) {
        raw >>= 7;
        size++;
    }
    return size;
}

static inline uint8_t *
write_varint(uint8_t *out, int64_t value)
{
    uint64_t raw = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    while (raw >= 0x80) {
        *out++ = (uint8_t)((raw & 0x7F) | 0x80);
        raw >>= 7;
    }
    *out++ = (uint8_t)raw;
    return out;
}

/* A key or value: bytes, bytearray or None; -2 for anything else (the Python path decides). */
static Py_ssize_t
field_length(PyObject *field, const char **start)
{
    if (field == Py_None) {
        *start = NULL;
        return -1;
    }
    if (PyBytes_CheckExact(field)) {
        *start = PyBytes_AS_STRING(field);
        return PyBytes_GET_SIZE(field);
    }
    if (PyByteArray_CheckExact(field)) {
        *start = PyByteArray_AS_STRING(field);
        return PyByteArray_GET_SIZE(field);
    }
    return -2;
}

static int
as_int64(PyObject *number, int64_t *out)
{
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (overflow) {
        return -1;
    }
    *out = value;
    return 0;
}

#define MAX_NATIVE_HEADERS 64

/* encode_record(offset_delta, timestamp_delta, key, value, headers) -> the record's bytes with
 * its length prefix, as RecordBatchBuilder.append encodes it; None when the Python path must
 * (integers beyond int64, types other than bytes/bytearray/None, headers other than a list
 * or tuple of (str, bytes | bytearray | None) pairs, more than 64 headers). */
static PyObject *
encode_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "encode_record takes 5 arguments");
        return NULL;
    }
    int64_t offset_delta, timestamp_delta;
    if (!PyLong_Check(args[0]) || !PyLong_Check(args[1]) || as_int64(args[0], &offset_delta) < 0 || as_int64(args[1], &timestamp_delta) < 0) {
        Py_RETURN_NONE;
    }
    const char *key, *value;
    Py_ssize_t key_length = field_length(args[2], &key);
    Py_ssize_t value_length = field_length(args[3], &value);
    if (key_length == -2 || value_length == -2) {
        Py_RETURN_NONE;
    }
    PyObject *headers = args[4];
    Py_ssize_t header_count = 0;
    const char *header_keys[MAX_NATIVE_HEADERS], *header_values[MAX_NATIVE_HEADERS];
    Py_ssize_t header_key_lengths[MAX_NATIVE_HEADERS], header_value_lengths[MAX_NATIVE_HEADERS];
    Py_ssize_t body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta);
    body += key_length < 0 ? 1 : varint_size(key_length) + key_length;
    body += value_length < 0 ? 1 : varint_size(value_length) + value_length;
    if (headers != Py_None) {
        if (!PyList_CheckExact(headers) && !PyTuple_CheckExact(headers)) {
            Py_RETURN_NONE;
        }
        header_count = PySequence_Fast_GET_SIZE(headers);
        if (header_count > MAX_NATIVE_HEADERS) {
            Py_RETURN_NONE;
        }
    }
    if (header_count == 0) {
        body += 1;
    }
    else {
        body += varint_size(header_count);
        PyObject **items = PySequence_Fast_ITEMS(headers);
        for (Py_ssize_t index = 0; index < header_count; index++) {
            PyObject *pair = items[index];
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0))) {
                Py_RETURN_NONE;
            }
            header_keys[index] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &header_key_lengths[index]);
            if (header_keys[index] == NULL) {
                return NULL; /* a key that is not encodable: UnicodeEncodeError, as str.encode */
            }
            header_value_lengths[index] = field_length(PyTuple_GET_ITEM(pair, 1), &header_values[index]);
            if (header_value_lengths[index] == -2) {
                Py_RETURN_NONE;
            }
            body += varint_size(header_key_lengths[index]) + header_key_lengths[index];
            body += header_value_lengths[index] < 0 ? 1 : varint_size(header_value_lengths[index]) + header_value_lengths[index];
        }
    }
    PyObject *record = PyBytes_FromStringAndSize(NULL, varint_size(body) + body);
    if (record == NULL) {
        return NULL;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(record);
    out = write_varint(out, body);
    *out++ = 0; /* attributes */
    out = write_varint(out, timestamp_delta);
    out = write_varint(out, offset_delta);
    out = write_varint(out, key_length);
    if (key_length > 0) {
        memcpy(out, key, key_length);
        out += key_length;
    }
    out = write_varint(out, value_length);
    if (value_length > 0) {
        memcpy(out, value, value_length);
        out += value_length;
    }
    out = write_varint(out, header_count);
    for (Py_ssize_t index = 0; index < header_count; index++) {
        out = write_varint(out, header_key_lengths[index]);
        memcpy(out, header_keys[index], header_key_lengths[index]);
        out += header_key_lengths[index];
        out = write_varint(out, header_value_lengths[index]);
        if (header_value_lengths[index] > 0) {
            memcpy(out, header_values[index], header_value_lengths[index]);
            out += header_value_lengths[index];
        }
    }
    return record;
}

/* ------------------------------------------------------------------ producer: delivery reports */

/* A batch's delivery records (weir.producer_accumulator.Delivery) in one array instead of one tuple
 * (with its index, timestamp and produce-time objects) per record. With random partitions a batch's
 * tuples were allocated among every other partition's and freed, report by report, into pools that
 * the next records then filled at random, so writing, reading and freeing each one missed the cache;
 * here a batch's records sit next to each other, are written and read in order, and no object is
 * allocated per record until its Message is built. The StickyAppender writes them directly; Python
 * appends the same 7-tuples it would append to a list; indexing gives them back (None once served),
 * so the log reads as the list of weir.producer's pure-Python path. */
typedef struct {
    PyObject *callback, *key, *value, *headers; /* strong references (key, value and headers may be None) */
    long long index, timestamp;
    double produced_at;
} DeliveryEntry;

typedef struct {
    PyObject_HEAD
    DeliveryEntry *entries;
    Py_ssize_t count, capacity;
    Py_ssize_t served; /* entries before it were reported (their references dropped) */
} DeliveryLog;

static PyTypeObject DeliveryLogType;

#define DELIVERY_LOG_FIRST_CAPACITY 16

/* Room for one more entry (doubling); -1 with MemoryError, nothing changed. */
static int
delivery_log_reserve(DeliveryLog *self)
{
    if (self->count < self->capacity) {
        return 0;
    }
    Py_ssize_t capacity = self->capacity == 0 ? DELIVERY_LOG_FIRST_CAPACITY : self->capacity * 2;
    if (capacity > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(DeliveryEntry)) {
        PyErr_NoMemory();
        return -1;
    }
    DeliveryEntry *entries = PyMem_Realloc(self->entries, capacity * sizeof(DeliveryEntry));
    if (entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->entries = entries;
    self->capacity = capacity;
    return 0;
}

/* Appends an entry (room reserved); takes new references to the objects. */
static inline void
delivery_log_push(DeliveryLog *self, PyObject *callback, long long index, PyObject *key, PyObject *value, PyObject *headers, long long timestamp,
                  double produced_at)
{
    DeliveryEntry *entry = &self->entries[self->count++];
    entry->callback = Py_NewRef(callback);
    entry->key = Py_NewRef(key);
    entry->value = Py_NewRef(value);
    entry->headers = Py_NewRef(headers);
    entry->index = index;
    entry->timestamp = timestamp;
    entry->produced_at = produced_at;
    if (self->count < self->capacity) {
        /* The partition's next record comes after records of other partitions: its entry's line
         * is asked for now, while this one's is in the cache. */
        __builtin_prefetch(&self->entries[self->count], 1);
        __builtin_prefetch((const char *)&self->entries[self->count + 1] - 1, 1);
    }
}

static void
delivery_entry_release(DeliveryEntry *entry)
{
    Py_CLEAR(entry->callback);
    Py_CLEAR(entry->key);
    Py_CLEAR(entry->value);
    Py_CLEAR(entry->headers);
}

static PyObject *
delivery_log_append(DeliveryLog *self, PyObject *delivery)
{
    if (!PyTuple_CheckExact(delivery) || PyTuple_GET_SIZE(delivery) != 7) {
        PyErr_SetString(PyExc_TypeError, "DeliveryLog.append() takes a delivery record, a 7-tuple (callback, index, key, value, headers, timestamp, produced_at)");
        return NULL;
    }
    long long index = PyLong_AsLongLong(PyTuple_GET_ITEM(delivery, 1));
    long long timestamp = index == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(PyTuple_GET_ITEM(delivery, 5));
    double produced_at = PyErr_Occurred() ? -1.0 : PyFloat_AsDouble(PyTuple_GET_ITEM(delivery, 6));
    if (PyErr_Occurred() || delivery_log_reserve(self) < 0) {
        return NULL;
    }
    delivery_log_push(self, PyTuple_GET_ITEM(delivery, 0), index, PyTuple_GET_ITEM(delivery, 2), PyTuple_GET_ITEM(delivery, 3), PyTuple_GET_ITEM(delivery, 4),
                      timestamp, produced_at);
    Py_RETURN_NONE;
}

static Py_ssize_t
delivery_log_length(DeliveryLog *self)
{
    return self->count;
}

/* log[i]: the 7-tuple appended, or None once its report was served (as the list's entry). */
static PyObject *
delivery_log_item(DeliveryLog *self, Py_ssize_t position)
{
    if (position < 0 || position >= self->count) {
        PyErr_SetString(PyExc_IndexError, "DeliveryLog index out of range");
        return NULL;
    }
    if (position < self->served) {
        Py_RETURN_NONE;
    }
    DeliveryEntry *entry = &self->entries[position];
    return Py_BuildValue("(OLOOOLd)", entry->callback, entry->index, entry->key, entry->value, entry->headers, entry->timestamp, entry->produced_at);
}

static int
delivery_log_traverse(DeliveryLog *self, visitproc visit, void *arg)
{
    for (Py_ssize_t position = self->served; position < self->count; position++) {
        DeliveryEntry *entry = &self->entries[position];
        Py_VISIT(entry->callback);
        Py_VISIT(entry->headers);
    }
    return 0;
}

static int
delivery_log_clear(DeliveryLog *self)
{
    for (Py_ssize_t position = self->served; position < self->count; position++) {
        delivery_entry_release(&self->entries[position]);
    }
    self->served = self->count;
    return 0;
}

static void
delivery_log_dealloc(DeliveryLog *self)
{
    PyObject_GC_UnTrack(self);
    delivery_log_clear(self);
    PyMem_Free(self->entries);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef delivery_log_methods[] = {
    {"append", (PyCFunction)delivery_log_append, METH_O, "append((callback, index, key, value, headers, timestamp, produced_at)): one record's delivery."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods delivery_log_sequence = {
    .sq_length = (lenfunc)delivery_log_length,
    .sq_item = (ssizeargfunc)delivery_log_item,
};

static PyTypeObject DeliveryLogType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weir._records_native.DeliveryLog",
    .tp_basicsize = sizeof(DeliveryLog),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "DeliveryLog(): one batch's delivery records, in order (see weir.producer_accumulator.Delivery).",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)delivery_log_dealloc,
    .tp_traverse = (traverseproc)delivery_log_traverse,
    .tp_clear = (inquiry)delivery_log_clear,
    .tp_methods = delivery_log_methods,
    .tp_as_sequence = &delivery_log_sequence,
};

/* The fields every delivery report of one batch shares (serve_deliveries' arguments). */
typedef struct {
    PyObject *topic, *partition, *error, *log_append_time, *timestamp_type;
    long long base_offset, log_append;
    double now;
} ReportFields;

/* Builds one record's Message and calls its callback with (error, Message); -1 when that fails or
 * the callback raises. ``timestamp`` is a new reference (or NULL, failing), taken over. */
static int
deliver_one(const ReportFields *report, PyObject *callback, long long index, PyObject *key, PyObject *value, PyObject *headers, PyObject *timestamp,
            double produced_at)
{
    PyObject *offset_object;
    if (report->error != Py_None) {
        offset_object = PyLong_FromLong(-1001); /* OFFSET_INVALID */
    }
    else if (report->base_offset < 0) {
        offset_object = PyLong_FromLong(-1);
    }
    else {
        offset_object = PyLong_FromLongLong(report->base_offset + index);
    }
    PyObject *latency = PyFloat_FromDouble(report->now - produced_at);
    PyObject *header_tuple = headers == Py_None ? PyTuple_New(0) : PySequence_Tuple(headers);
    if (report->log_append >= 0) {
        Py_XSETREF(timestamp, Py_NewRef(report->log_append_time));
    }
    if (offset_object == NULL || latency == NULL || header_tuple == NULL || timestamp == NULL) {
        Py_XDECREF(offset_object);
        Py_XDECREF(latency);
        Py_XDECREF(header_tuple);
        Py_XDECREF(timestamp);
        return -1;
    }
    PyObject *const values[M_SLOTS] = {
        [M_TOPIC] = Py_NewRef(report->topic),
        [M_PARTITION] = Py_NewRef(report->partition),
        [M_OFFSET] = offset_object,
        [M_TIMESTAMP] = timestamp,
        [M_KEY] = Py_NewRef(key),
        [M_VALUE] = Py_NewRef(value),
        [M_HEADERS] = header_tuple,
        [M_TIMESTAMP_TYPE] = Py_NewRef(report->timestamp_type),
        [M_ERROR] = Py_NewRef(report->error),
        [M_LATENCY] = latency,
        [M_LEADER_EPOCH] = Py_NewRef(Py_None),
    };
    PyObject *message = new_message(values);
    if (message == NULL) {
        for (int slot = 0; slot < M_SLOTS; slot++) {
            Py_DECREF(values[slot]);
        }
        return -1;
    }
    PyObject *call_args[2] = {report->error, message};
    PyObject *result = PyObject_Vectorcall(callback, call_args, 2, NULL);
    Py_DECREF(message);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* The reports of a DeliveryLog from its first unserved entry; each entry is released as its callback
 * returns (the report is served once). The entry is read again after each callback: nothing is held
 * across one. */
static int
serve_log(DeliveryLog *log, const ReportFields *report)
{
    while (log->served < log->count) {
        DeliveryEntry *entry = &log->entries[log->served];
        PyObject *callback = Py_NewRef(entry->callback), *key = Py_NewRef(entry->key), *value = Py_NewRef(entry->value), *headers = Py_NewRef(entry->headers);
        int failed = deliver_one(report, callback, entry->index, key, value, headers, PyLong_FromLongLong(entry->timestamp), entry->produced_at);
        Py_DECREF(callback);
        Py_DECREF(key);
        Py_DECREF(value);
        Py_DECREF(headers);
        if (failed) {
            return -1;
        }
        if (log->served < log->count) {
            delivery_entry_release(&log->entries[log->served]);
            log->served++;
        }
    }
    return 0;
}

/* The reports of a list of 7-tuples (a record failed before it entered a batch, or the tests'); the
 * entry of each record whose callback returned becomes None. */
static int
serve_list(PyObject *deliveries, const ReportFields *report)
{
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(deliveries); index++) {
        PyObject *delivery = Py_NewRef(PyList_GET_ITEM(deliveries, index));
        if (delivery == Py_None) {
            Py_DECREF(delivery);
            continue;
        }
        if (!PyTuple_CheckExact(delivery) || PyTuple_GET_SIZE(delivery) != 7) {
            Py_DECREF(delivery);
            PyErr_SetString(PyExc_TypeError, "a delivery record is a 7-tuple");
            return -1;
        }
        long long record_index = PyLong_AsLongLong(PyTuple_GET_ITEM(delivery, 1));
        double produced_at = record_index == -1 && PyErr_Occurred() ? -1.0 : PyFloat_AsDouble(PyTuple_GET_ITEM(delivery, 6));
        if (PyErr_Occurred()) {
            Py_DECREF(delivery);
            return -1;
        }
        int failed = deliver_one(report, PyTuple_GET_ITEM(delivery, 0), record_index, PyTuple_GET_ITEM(delivery, 2), PyTuple_GET_ITEM(delivery, 3),
                                 PyTuple_GET_ITEM(delivery, 4), Py_NewRef(PyTuple_GET_ITEM(delivery, 5)), produced_at);
        if (failed) {
            Py_DECREF(delivery);
            return -1;
        }
        if (index < PyList_GET_SIZE(deliveries) && PyList_GET_ITEM(deliveries, index) == delivery) {
            PyList_SET_ITEM(deliveries, index, Py_NewRef(Py_None));
            Py_DECREF(delivery);
        }
        Py_DECREF(delivery);
    }
    return 0;
}

/* serve_deliveries(deliveries, topic, partition, error, base_offset, log_append_time, timestamp_type,
 * only_errors, now): calls each delivery record's callback with (error, Message), as
 * weir.producer.Producer._serve_python does; stops at the first callback that raises. ``deliveries``
 * is a DeliveryLog or a list of delivery records; a record whose callback returned is not served again. */
static PyObject *
serve_deliveries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9 || !(PyList_CheckExact(args[0]) || Py_IS_TYPE(args[0], &DeliveryLogType))) {
        PyErr_SetString(PyExc_TypeError, "serve_deliveries(deliveries: DeliveryLog | list, topic, partition, error, base_offset, log_append_time, timestamp_type, only_errors, now)");
        return NULL;
    }
    if (MessageType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "weir._records_native.init_message() was not called");
        return NULL;
    }
    ReportFields report = {
        .topic = args[1], .partition = args[2], .error = args[3], .log_append_time = args[5], .timestamp_type = args[6],
    };
    report.base_offset = PyLong_AsLongLong(args[4]);
    report.log_append = PyLong_AsLongLong(report.log_append_time);
    int only_errors = PyObject_IsTrue(args[7]);
    report.now = PyFloat_AsDouble(args[8]);
    if (PyErr_Occurred() || only_errors < 0) {
        return NULL;
    }
    if (report.error == Py_None && only_errors) {
        Py_RETURN_NONE; /* delivery.report.only.error: nothing to report */
    }
    int failed = PyList_CheckExact(args[0]) ? serve_list(args[0], &report) : serve_log((DeliveryLog *)args[0], &report);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ producer: key hashes */

/* The partitioners' key hashes of weir/partitioner.py, the reference (tests/weir/test_producer_fast_path_partitions.py
 * checks both on random keys): CRC-32 (zlib.crc32), Kafka's murmur2 and Sarama's FNV-1a. */

enum { HASH_NONE = 0, HASH_CRC32 = 1, HASH_MURMUR2 = 2, HASH_FNV1A = 3 };

static uint32_t crc32_table[256];

static void
crc32_init(void)
{
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t value = index;
        for (int bit = 0; bit < 8; bit++) {
            value = value & 1 ? 0xEDB88320u ^ (value >> 1) : value >> 1;
        }
        crc32_table[index] = value;
    }
}

static uint32_t
crc32_of(const uint8_t *data, Py_ssize_t length)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (Py_ssize_t index = 0; index < length; index++) {
        crc = crc32_table[(crc ^ data[index]) & 0xFF] ^ (crc >> 8);
    }
    return crc ^ 0xFFFFFFFFu;
}

/* Kafka's Utils.murmur2 (weir.partitioner.murmur2), as its unsigned 32 bits. */
static uint32_t
murmur2_of(const uint8_t *data, Py_ssize_t length)
{
    const uint32_t m = 0x5BD1E995u;
    uint32_t h = 0x9747B28Cu ^ (uint32_t)length;
    Py_ssize_t words = length / 4;
    for (Py_ssize_t index = 0; index < words; index++) {
        const uint8_t *at = data + 4 * index;
        uint32_t k = (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h = (h * m) ^ k;
    }
    Py_ssize_t base = length & ~(Py_ssize_t)3;
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)data[base + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)data[base + 1] << 8;
        /* fall through */
    case 1:
        h ^= data[base];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* librdkafka's rd_fnv1a, then the absolute value of the int32 (INT32_MIN stays 0x80000000). */
static uint32_t
fnv1a_of(const uint8_t *data, Py_ssize_t length)
{
    uint32_t h = 0x811C9DC5u;
    for (Py_ssize_t index = 0; index < length; index++) {
        h = (h ^ data[index]) * 0x01000193u;
    }
    if (h & 0x80000000u) {
        h = (uint32_t)(-(int64_t)(int32_t)h);
    }
    return h;
}

/* The partition of weir.partitioner's hash ``kind`` for the key's bytes (kind not HASH_NONE, count > 0). */
static Py_ssize_t
hash_partition(int kind, const uint8_t *data, Py_ssize_t length, Py_ssize_t count)
{
    uint32_t hash;
    switch (kind) {
    case HASH_CRC32:
        hash = crc32_of(data, length);
        break;
    case HASH_MURMUR2:
        hash = murmur2_of(data, length) & 0x7FFFFFFFu;
        break;
    default:
        hash = fnv1a_of(data, length);
        break;
    }
    return (Py_ssize_t)(hash % (uint32_t)count);
}

/* murmur2(data) -> Kafka's signed 32-bit murmur2 (weir.partitioner.murmur2). */
static PyObject *
murmur2_function(PyObject *self, PyObject *data)
{
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "murmur2() takes bytes");
        return NULL;
    }
    return PyLong_FromLong((int32_t)murmur2_of((const uint8_t *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)));
}

/* key_partition(kind, key, partition_count) -> the partition of the key under hash ``kind`` (1 CRC-32,
 * 2 murmur2, 3 FNV-1a), as weir.partitioner's consistent_partition, murmur2_partition, fnv1a_partition. */
static PyObject *
key_partition_function(PyObject *self, PyObject *args)
{
    int kind;
    Py_buffer key;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "iy*n", &kind, &key, &count)) {
        return NULL;
    }
    if (kind < HASH_CRC32 || kind > HASH_FNV1A || count <= 0 || count > 0xFFFFFFFFLL) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError, "key_partition() takes a hash kind of 1 to 3 and a partition count of at least 1");
        return NULL;
    }
    Py_ssize_t partition = hash_partition(kind, key.buf, key.len, count);
    PyBuffer_Release(&key);
    return PyLong_FromSsize_t(partition);
}

/* ------------------------------------------------------------------ producer: StickyAppender */

/* The producer's per-record path (weir.producer, weir.producer_accumulator) for a record without
 * headers, with a bytes value and a bytes key or none, whose partition's open batch is *armed*: the
 * explicit partition, else the partition its key hashes to (the producer's partitioner, in C above),
 * else (no key) the topic's sticky partition. The accumulator arms the appender with an open batch
 * (its records buffer and counters) under its lock after each Python append to it, for one topic at
 * a time (any number of its partitions); produce() then runs here: it takes the accumulator's lock
 * without blocking, encodes the record into the armed batch's buffer exactly as
 * RecordBatchBuilder.append would, and counts it. Anything else (another topic, a partition without
 * an armed batch, headers, a batch without room, buffer.memory nearly used, changed metadata, a lock
 * held by another thread) goes to Producer.produce in Python, the reference, which disarms that
 * partition's batch first and may arm it again. What the appender counted reaches the Python objects
 * through take() (lock held): only the batches that took records since the last take() are listed. */

#define RECORD_OVERHEAD 21 /* weir.producer_accumulator.RECORD_OVERHEAD */

/* One partition's armed batch; records NULL when that partition is not armed. */
typedef struct {
    PyObject *records;
    DeliveryLog *deliveries; /* the batch's delivery records */
    long long count, size, base_timestamp, max_timestamp, last_offset_delta;
    long long added_records, added_bytes; /* since the last take() */
    int listed;                           /* in the appender's ``touched`` list */
} ArmedBatch;

typedef struct {
    PyObject_HEAD
    PyObject *slow;            /* Producer.produce in Python, bound: every record the fast path declines */
    PyObject *cluster;         /* weir.cluster.Cluster: its .topics maps names to immutable TopicInfo */
    PyObject *lock_acquire;    /* the accumulator lock's bound acquire and release */
    PyObject *lock_release;
    PyObject *close_armed;     /* RecordAccumulator._close_armed(partition): that armed batch is full (lock held) */
    PyObject *default_delivery; /* the on_delivery of the configuration, or None */
    long long message_max_bytes, batch_size, batch_max_records, buffer_memory;
    /* The partitioner (weir.partitioner.Partitioner.native_hash): kind -1 sends every keyed record to Python. */
    int hash_kind, hash_missing_key, empty_is_missing;
    /* The armed topic and its metadata; NULL when no batch is armed. */
    PyObject *topic, *info;
    ArmedBatch *batches; /* partition_count of them, kept across disarm() */
    Py_ssize_t partition_count, armed_count;
    Py_ssize_t sticky; /* the partition keyless records go to, -1 when its batch is not armed */
    Py_ssize_t *touched; /* partitions whose batch took records since the last take() */
    Py_ssize_t touched_count;
    long long buffered; /* buffer.memory in use, as of the last arm() plus what was appended here */
} StickyAppender;

static PyObject *str_topics = NULL;
static PyObject *produce_keywords[8] = {NULL};
static const char *const produce_keyword_names[8] = {"topic", "value", "key", "partition", "on_delivery", "callback", "timestamp", "headers"};

static void
batch_disarm(StickyAppender *self, Py_ssize_t partition)
{
    ArmedBatch *batch = &self->batches[partition];
    if (batch->records != NULL) {
        self->armed_count--;
    }
    Py_CLEAR(batch->records);
    Py_CLEAR(batch->deliveries);
    if (self->sticky == partition) {
        self->sticky = -1;
    }
}

static void
appender_disarm(StickyAppender *self)
{
    for (Py_ssize_t partition = 0; self->armed_count > 0 && partition < self->partition_count; partition++) {
        batch_disarm(self, partition);
    }
    self->armed_count = 0;
    self->sticky = -1;
    Py_CLEAR(self->topic);
    Py_CLEAR(self->info);
}

static int
appender_init(StickyAppender *self, PyObject *args, PyObject *kwargs)
{
    PyObject *slow, *cluster, *lock, *close_armed, *default_delivery;
    long long message_max_bytes, batch_size, batch_max_records, buffer_memory;
    int hash_kind = -1, hash_missing_key = 0, empty_is_missing = 0;
    if (!PyArg_ParseTuple(args, "OOOOOLLLL|ipp", &slow, &cluster, &lock, &close_armed, &default_delivery, &message_max_bytes, &batch_size,
                          &batch_max_records, &buffer_memory, &hash_kind, &hash_missing_key, &empty_is_missing)) {
        return -1;
    }
    if (hash_kind < -1 || hash_kind > HASH_FNV1A) {
        PyErr_SetString(PyExc_ValueError, "StickyAppender: the hash kind is -1 (keyed records in Python), 0 (keys ignored) or 1 to 3");
        return -1;
    }
    PyObject *acquire = PyObject_GetAttrString(lock, "acquire");
    PyObject *release = acquire == NULL ? NULL : PyObject_GetAttrString(lock, "release");
    if (release == NULL) {
        Py_XDECREF(acquire);
        return -1;
    }
    Py_XSETREF(self->slow, Py_NewRef(slow));
    Py_XSETREF(self->cluster, Py_NewRef(cluster));
    Py_XSETREF(self->lock_acquire, acquire);
    Py_XSETREF(self->lock_release, release);
    Py_XSETREF(self->close_armed, Py_NewRef(close_armed));
    Py_XSETREF(self->default_delivery, Py_NewRef(default_delivery));
    self->message_max_bytes = message_max_bytes;
    self->batch_size = batch_size;
    self->batch_max_records = batch_max_records;
    self->buffer_memory = buffer_memory;
    self->hash_kind = hash_kind;
    self->hash_missing_key = hash_missing_key;
    self->empty_is_missing = empty_is_missing;
    appender_disarm(self);
    return 0;
}

static int
appender_traverse(StickyAppender *self, visitproc visit, void *arg)
{
    Py_VISIT(self->slow);
    Py_VISIT(self->cluster);
    Py_VISIT(self->lock_acquire);
    Py_VISIT(self->lock_release);
    Py_VISIT(self->close_armed);
    Py_VISIT(self->default_delivery);
    Py_VISIT(self->topic);
    Py_VISIT(self->info);
    for (Py_ssize_t partition = 0; self->armed_count > 0 && partition < self->partition_count; partition++) {
        Py_VISIT(self->batches[partition].records);
        Py_VISIT(self->batches[partition].deliveries);
    }
    return 0;
}

static int
appender_clear(StickyAppender *self)
{
    Py_CLEAR(self->slow);
    Py_CLEAR(self->cluster);
    Py_CLEAR(self->lock_acquire);
    Py_CLEAR(self->lock_release);
    Py_CLEAR(self->close_armed);
    Py_CLEAR(self->default_delivery);
    appender_disarm(self);
    return 0;
}

static void
appender_dealloc(StickyAppender *self)
{
    PyObject_GC_UnTrack(self);
    appender_clear(self);
    PyMem_Free(self->batches);
    PyMem_Free(self->touched);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Room for partition_count batches (every batch disarmed, no topic armed). */
static int
appender_resize(StickyAppender *self, Py_ssize_t partition_count)
{
    if (partition_count == self->partition_count) {
        return 0;
    }
    ArmedBatch *batches = PyMem_Calloc(partition_count, sizeof(ArmedBatch));
    Py_ssize_t *touched = PyMem_Calloc(partition_count, sizeof(Py_ssize_t));
    if (batches == NULL || touched == NULL) {
        PyMem_Free(batches);
        PyMem_Free(touched);
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(self->batches);
    PyMem_Free(self->touched);
    self->batches = batches;
    self->touched = touched;
    self->partition_count = partition_count;
    self->touched_count = 0;
    return 0;
}

/* arm(topic, info, partition_count, partition, sticky, records, deliveries, count, size, base_timestamp,
 * max_timestamp, last_offset_delta, buffered): records of topic for that partition (and, when sticky,
 * its keyless records) go to this batch until disarm() (accumulator lock held, every take() folded).
 * Another topic, metadata or partition count disarms every batch first. */
static PyObject *
appender_arm(StickyAppender *self, PyObject *args)
{
    PyObject *topic, *info, *records, *deliveries;
    Py_ssize_t partition_count, partition;
    int sticky;
    long long count, size, base_timestamp, max_timestamp, last_offset_delta, buffered;
    if (!PyArg_ParseTuple(args, "UOnnpO!O!LLLLLL", &topic, &info, &partition_count, &partition, &sticky, &PyByteArray_Type, &records, &DeliveryLogType,
                          &deliveries, &count, &size, &base_timestamp, &max_timestamp, &last_offset_delta, &buffered)) {
        return NULL;
    }
    if (partition_count <= 0 || partition_count > 0xFFFFFFFFLL || partition < 0 || partition >= partition_count) {
        PyErr_Format(PyExc_ValueError, "arm(): partition %zd of %zd", partition, partition_count);
        return NULL;
    }
    if (self->topic == NULL || info != self->info || partition_count != self->partition_count || PyUnicode_Compare(topic, self->topic) != 0) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        appender_disarm(self);
        if (appender_resize(self, partition_count) < 0) {
            return NULL;
        }
        self->topic = Py_NewRef(topic);
        self->info = Py_NewRef(info);
    }
    ArmedBatch *batch = &self->batches[partition];
    batch_disarm(self, partition);
    batch->records = Py_NewRef(records);
    batch->deliveries = (DeliveryLog *)Py_NewRef(deliveries);
    batch->count = count;
    batch->size = size;
    batch->base_timestamp = base_timestamp;
    batch->max_timestamp = max_timestamp;
    batch->last_offset_delta = last_offset_delta;
    batch->added_records = batch->added_bytes = 0;
    self->armed_count++;
    if (sticky) {
        self->sticky = partition;
    }
    self->buffered = buffered;
    Py_RETURN_NONE;
}

/* take() -> [(partition, records added, bytes added, record count, max timestamp, last offset delta)]
 * for every armed batch that took records since the last take() or its arm(); they stay armed
 * (accumulator lock held). */
static PyObject *
appender_take(StickyAppender *self, PyObject *unused)
{
    PyObject *result = PyList_New(0);
    if (result == NULL) {
        return NULL;
    }
    for (Py_ssize_t index = 0; index < self->touched_count; index++) {
        Py_ssize_t partition = self->touched[index];
        ArmedBatch *batch = &self->batches[partition];
        if (batch->records == NULL || batch->added_records == 0) {
            continue;
        }
        PyObject *entry = Py_BuildValue("(nLLLLL)", partition, batch->added_records, batch->added_bytes, batch->count, batch->max_timestamp,
                                        batch->last_offset_delta);
        if (entry == NULL || PyList_Append(result, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(result);
            return NULL; /* nothing reset: a later take() lists them all again */
        }
        Py_DECREF(entry);
    }
    for (Py_ssize_t index = 0; index < self->touched_count; index++) {
        ArmedBatch *batch = &self->batches[self->touched[index]];
        batch->listed = 0;
        batch->added_records = batch->added_bytes = 0;
    }
    self->touched_count = 0;
    return result;
}

/* disarm() / disarm(partition): every armed batch, or that partition's, takes no more records here
 * (take() first: counts not taken are lost). */
static PyObject *
appender_disarm_method(StickyAppender *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 0) {
        appender_disarm(self);
        Py_RETURN_NONE;
    }
    Py_ssize_t partition = nargs == 1 ? PyLong_AsSsize_t(args[0]) : -1;
    if (partition == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (nargs != 1 || partition < 0) {
        PyErr_SetString(PyExc_TypeError, "disarm() takes no argument or a partition");
        return NULL;
    }
    if (partition < self->partition_count) {
        batch_disarm(self, partition);
    }
    Py_RETURN_NONE;
}

static PyObject *
appender_armed(StickyAppender *self, void *closure)
{
    return PyBool_FromLong(self->armed_count > 0);
}

static PyObject *
appender_armed_partitions(StickyAppender *self, void *closure)
{
    PyObject *result = PyList_New(0);
    for (Py_ssize_t partition = 0; result != NULL && partition < self->partition_count; partition++) {
        if (self->batches[partition].records != NULL) {
            PyObject *number = PyLong_FromSsize_t(partition);
            if (number == NULL || PyList_Append(result, number) < 0) {
                Py_CLEAR(result);
            }
            Py_XDECREF(number);
        }
    }
    return result;
}

/* PyByteArray_Resize to size, doubling the allocation when it must grow: bytearray's own growth
 * (12.5%) copies a megabyte batch about eight times over while it fills, record by record. The
 * second resize, to at least half the allocation, keeps the allocation (a "minor downsize"). */
static int
grow_bytearray(PyObject *array, Py_ssize_t size)
{
    Py_ssize_t allocated = ((PyByteArrayObject *)array)->ob_alloc;
    if (size + 1 > allocated && allocated > 0 && size < PY_SSIZE_T_MAX / 4) {
        if (PyByteArray_Resize(array, Py_MAX(size, 2 * allocated)) < 0) {
            return -1;
        }
    }
    return PyByteArray_Resize(array, size);
}

static inline long long
wall_clock_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* time.time_ns()'s clock */
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static inline double
monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* time.monotonic()'s clock */
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* The partition of a record as Producer.produce chooses it (explicit, else keyed, else sticky), or -1
 * when Python must decide (a partition out of range, a key the appender does not hash, no armed
 * sticky batch). ``key`` is None or bytes. */
static Py_ssize_t
appender_partition(StickyAppender *self, long explicit_partition, PyObject *key)
{
    if (explicit_partition >= 0) {
        return explicit_partition < self->partition_count ? (Py_ssize_t)explicit_partition : -1;
    }
    Py_ssize_t key_length = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    if (self->hash_kind == HASH_NONE || (self->hash_kind < 0 && key_length < 0)) {
        return self->sticky; /* Partitioner.keyed_partition is -1: the sticky partition */
    }
    if (self->hash_kind < 0) {
        return -1;
    }
    if (key_length < 0 || (self->empty_is_missing && key_length == 0)) {
        if (!self->hash_missing_key) {
            return self->sticky;
        }
        return hash_partition(self->hash_kind, (const uint8_t *)"", 0, self->partition_count);
    }
    return hash_partition(self->hash_kind, (const uint8_t *)PyBytes_AS_STRING(key), key_length, self->partition_count);
}

/* 1 when the record was appended, 0 when Python must take it (nothing changed), -1 on error.
 * Runs with the accumulator lock held. */
static int
appender_append(StickyAppender *self, PyObject *topic, PyObject *key, PyObject *value, long explicit_partition, PyObject *timestamp_arg,
                PyObject *delivery)
{
    if (self->topic == NULL || (topic != self->topic && PyUnicode_Compare(topic, self->topic) != 0)) {
        return 0;
    }
    PyObject *topics = PyObject_GetAttr(self->cluster, str_topics);
    if (topics == NULL) {
        return -1;
    }
    PyObject *info = PyDict_CheckExact(topics) ? PyDict_GetItemWithError(topics, topic) : NULL; /* borrowed */
    Py_DECREF(topics);
    if (info != self->info) {
        return PyErr_Occurred() ? -1 : 0; /* new metadata (or none): Python decides */
    }
    Py_ssize_t partition = appender_partition(self, explicit_partition, key);
    if (partition < 0) {
        return 0;
    }
    ArmedBatch *batch = &self->batches[partition];
    if (batch->records == NULL) {
        return 0;
    }
    Py_ssize_t key_length = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
    Py_ssize_t value_length = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    long long size = (value_length < 0 ? 0 : value_length) + (key_length < 0 ? 0 : key_length);
    long long needed = size + RECORD_OVERHEAD;
    if (size > self->message_max_bytes || (self->buffered + needed > self->buffer_memory && self->buffered > 0) ||
        batch->size + needed > self->batch_size || batch->count >= self->batch_max_records) {
        return 0;
    }
    long long timestamp;
    if (timestamp_arg == NULL) {
        timestamp = wall_clock_ms();
    }
    else {
        int overflow;
        timestamp = PyLong_AsLongLongAndOverflow(timestamp_arg, &overflow);
        if (timestamp == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow) {
            return 0;
        }
        if (timestamp == 0) {
            timestamp = wall_clock_ms();
        }
    }
    long long offset_delta = batch->last_offset_delta + 1;
    long long timestamp_delta;
    if (__builtin_sub_overflow(timestamp, batch->base_timestamp, &timestamp_delta)) {
        return 0;
    }
    Py_ssize_t body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta);
    body += key_length < 0 ? 1 : varint_size(key_length) + key_length;
    body += value_length < 0 ? 1 : varint_size(value_length) + value_length;
    body += 1; /* no headers */
    Py_ssize_t added = varint_size(body) + body;
    if (delivery != Py_None && delivery_log_reserve(batch->deliveries) < 0) {
        return -1;
    }
    Py_ssize_t start = PyByteArray_GET_SIZE(batch->records);
    if (grow_bytearray(batch->records, start + added) < 0) {
        return -1;
    }
    if (delivery != Py_None) {
        delivery_log_push(batch->deliveries, delivery, batch->count, key, value, Py_None, timestamp, monotonic_seconds());
    }
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(batch->records) + start;
    out = write_varint(out, body);
    *out++ = 0; /* attributes */
    out = write_varint(out, timestamp_delta);
    out = write_varint(out, offset_delta);
    out = write_varint(out, key_length);
    if (key_length > 0) {
        memcpy(out, PyBytes_AS_STRING(key), key_length);
        out += key_length;
    }
    out = write_varint(out, value_length);
    if (value_length > 0) {
        memcpy(out, PyBytes_AS_STRING(value), value_length);
        out += value_length;
    }
    *out = 0; /* header count */
    batch->count += 1;
    batch->size += added;
    self->buffered += added;
    batch->added_records += 1;
    batch->added_bytes += added;
    batch->last_offset_delta = offset_delta;
    if (timestamp > batch->max_timestamp) {
        batch->max_timestamp = timestamp;
    }
    if (!batch->listed) {
        batch->listed = 1;
        self->touched[self->touched_count++] = partition;
    }
    if (batch->size >= self->batch_size || batch->count >= self->batch_max_records) {
        PyObject *number = PyLong_FromSsize_t(partition);
        PyObject *closed = number == NULL ? NULL : PyObject_CallOneArg(self->close_armed, number); /* disarms it */
        Py_XDECREF(number);
        if (closed == NULL) {
            return -1;
        }
        Py_DECREF(closed);
    }
    return 1;
}

/* produce(topic, value=None, key=None, partition=-1, on_delivery=None, callback=None, timestamp=0,
 * headers=None): Producer.produce, here for a record whose partition's batch is armed, else in Python. */
static PyObject *
appender_produce(StickyAppender *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *given[8] = {NULL};
    int plain = nargs >= 1 && nargs <= 8;
    for (Py_ssize_t index = 0; plain && index < nargs; index++) {
        given[index] = args[index];
    }
    Py_ssize_t keyword_count = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t index = 0; plain && index < keyword_count; index++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, index);
        int found = 0;
        for (int slot = 1; slot < 8; slot++) {
            if (name == produce_keywords[slot] || PyUnicode_Compare(name, produce_keywords[slot]) == 0) {
                plain = given[slot] == NULL;
                given[slot] = args[nargs + index];
                found = 1;
                break;
            }
        }
        plain = plain && found;
    }
    PyObject *value = given[1] == NULL ? Py_None : given[1];
    PyObject *key = given[2] == NULL ? Py_None : given[2];
    PyObject *partition = given[3];
    long explicit_partition = -1;
    plain = plain && PyUnicode_CheckExact(given[0]) && (value == Py_None || PyBytes_CheckExact(value)) && (key == Py_None || PyBytes_CheckExact(key)) &&
            (given[7] == NULL || given[7] == Py_None) && (partition == NULL || PyLong_CheckExact(partition)) &&
            (given[6] == NULL || PyLong_CheckExact(given[6]));
    if (plain && partition != NULL) {
        explicit_partition = PyLong_AsLong(partition);
        if (explicit_partition == -1 && PyErr_Occurred()) {
            PyErr_Clear(); /* a partition beyond a C long: Python's path says what it is */
            plain = 0;
        }
    }
    PyObject *delivery = self->default_delivery;
    if (plain) {
        for (int slot = 5; slot >= 4; slot--) { /* on_delivery or callback or the configuration's */
            if (given[slot] != NULL) {
                int truth = PyObject_IsTrue(given[slot]);
                if (truth < 0) {
                    return NULL;
                }
                if (truth) {
                    delivery = given[slot];
                }
            }
        }
    }
    if (plain && self->armed_count > 0) {
        PyObject *locked = PyObject_CallOneArg(self->lock_acquire, Py_False);
        if (locked == NULL) {
            return NULL;
        }
        int acquired = locked == Py_True;
        Py_DECREF(locked);
        if (acquired) {
            Py_INCREF(delivery);
            int appended = appender_append(self, given[0], key, value, explicit_partition, given[6], delivery);
            Py_DECREF(delivery);
            PyObject *error_type, *error_value, *error_traceback;
            PyErr_Fetch(&error_type, &error_value, &error_traceback);
            PyObject *released = PyObject_CallNoArgs(self->lock_release);
            PyErr_Restore(error_type, error_value, error_traceback);
            if (released == NULL) {
                return NULL;
            }
            Py_DECREF(released);
            if (appended < 0) {
                return NULL;
            }
            if (appended > 0) {
                Py_RETURN_NONE;
            }
        }
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyMethodDef appender_methods[] = {
    {"produce", (PyCFunction)(void (*)(void))appender_produce, METH_FASTCALL | METH_KEYWORDS, "Producer.produce: records of armed batches here, others in Python."},
    {"arm", (PyCFunction)appender_arm, METH_VARARGS,
     "arm(topic, info, partition_count, partition, sticky, records, deliveries, count, size, base_timestamp, max_timestamp, last_offset_delta, buffered) "
     "(accumulator lock held)."},
    {"take", (PyCFunction)appender_take, METH_NOARGS,
     "take() -> [(partition, records, bytes, count, max_timestamp, last_offset_delta)] of the batches that took records since the last take()."},
    {"disarm", (PyCFunction)(void (*)(void))appender_disarm_method, METH_FASTCALL, "disarm() / disarm(partition): those batches take no more records here."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef appender_getset[] = {
    {"armed", (getter)appender_armed, NULL, "Whether a batch is armed.", NULL},
    {"armed_partitions", (getter)appender_armed_partitions, NULL, "The partitions whose batch is armed, ascending.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StickyAppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weir._records_native.StickyAppender",
    .tp_basicsize = sizeof(StickyAppender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "StickyAppender(slow_produce, cluster, lock, close_armed, default_delivery, message_max_bytes, batch_size, batch_max_records, buffer_memory, "
              "hash_kind=-1, hash_missing_key=False, empty_is_missing=False)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)appender_init,
    .tp_dealloc = (destructor)appender_dealloc,
    .tp_traverse = (traverseproc)appender_traverse,
    .tp_clear = (inquiry)appender_clear,
    .tp_methods = appender_methods,
    .tp_getset = appender_getset,
};

/* ------------------------------------------------------------------ module */

static PyObject *
init(PyObject *self, PyObject *error_class)
{
    if (!PyType_Check(error_class) || !PyType_IsSubtype((PyTypeObject *)error_class, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "init() takes an exception class");
        return NULL;
    }
    Py_XSETREF(RecordFormatError, Py_NewRef(error_class));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", init, METH_O, "init(RecordFormatError): the exception class decode_records raises."},
    {"walk_records", walk_records, METH_VARARGS, "walk_records(data, records_count, require_keys): the broker's per-batch record walk."},
    {"decode_records", decode_records, METH_VARARGS, "decode_records(data, records_count, base_offset, base_timestamp, max_timestamp, log_append, min_offset)."},
    {"init_message", init_message, METH_O, "init_message(Message): the class decode_messages builds (its slots' layout is checked)."},
    {"decode_messages", decode_messages, METH_VARARGS,
     "decode_messages(data, records_count, base_offset, base_timestamp, max_timestamp, log_append, min_offset, topic, partition, timestamp_type, leader_epoch)."},
    {"serve_deliveries", (PyCFunction)(void (*)(void))serve_deliveries, METH_FASTCALL,
     "serve_deliveries(deliveries, topic, partition, error, base_offset, log_append_time, timestamp_type, only_errors, now): delivery callbacks."},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL, "encode_record(offset_delta, timestamp_delta, key, value, headers): one record with its length."},
    {"murmur2", murmur2_function, METH_O, "murmur2(data) -> Kafka's signed 32-bit murmur2 of the bytes (weir.partitioner.murmur2)."},
    {"key_partition", key_partition_function, METH_VARARGS, "key_partition(kind, key, partition_count): the partition of the key under hash kind 1 CRC-32, 2 murmur2, 3 FNV-1a."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "weir._records_native", "Native record codec: see weir/records.py, the reference.", -1, methods,
};

PyMODINIT_FUNC
PyInit__records_native(void)
{
    str_topics = PyUnicode_InternFromString("topics");
    if (str_topics == NULL) {
        return NULL;
    }
    for (int slot = 0; slot < 8; slot++) {
        produce_keywords[slot] = PyUnicode_InternFromString(produce_keyword_names[slot]);
        if (produce_keywords[slot] == NULL) {
            return NULL;
        }
    }
    crc32_init();
    if (PyType_Ready(&StickyAppenderType) < 0 || PyType_Ready(&DeliveryLogType) < 0) {
        return NULL;
    }
    PyObject *module_object = PyModule_Create(&module);
    if (module_object == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module_object, "StickyAppender", (PyObject *)&StickyAppenderType) < 0 ||
        PyModule_AddObjectRef(module_object, "DeliveryLog", (PyObject *)&DeliveryLogType) < 0) {
        Py_DECREF(module_object);
        return NULL;
    }
    return module_object;
}
