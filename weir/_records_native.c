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

/* serve_deliveries(deliveries, topic, partition, error, base_offset, log_append_time, timestamp_type,
 * only_errors, now): calls each delivery record's callback with (error, Message), as
 * weir.producer.Producer._serve_python does; stops at the first callback that raises. */
static PyObject *
serve_deliveries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "serve_deliveries(deliveries: list, topic, partition, error, base_offset, log_append_time, timestamp_type, only_errors, now)");
        return NULL;
    }
    if (MessageType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "weir._records_native.init_message() was not called");
        return NULL;
    }
    PyObject *deliveries = args[0], *topic = args[1], *partition = args[2], *error = args[3], *log_append_time = args[5], *timestamp_type = args[6];
    long long base_offset = PyLong_AsLongLong(args[4]);
    long long log_append = PyLong_AsLongLong(log_append_time);
    int only_errors = PyObject_IsTrue(args[7]);
    double now = PyFloat_AsDouble(args[8]);
    if (PyErr_Occurred() || only_errors < 0) {
        return NULL;
    }
    if (error == Py_None && only_errors) {
        Py_RETURN_NONE; /* delivery.report.only.error: nothing to report */
    }
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(deliveries); index++) {
        PyObject *delivery = Py_NewRef(PyList_GET_ITEM(deliveries, index));
        if (!PyTuple_CheckExact(delivery) || PyTuple_GET_SIZE(delivery) != 7) {
            Py_DECREF(delivery);
            PyErr_SetString(PyExc_TypeError, "a delivery record is a 7-tuple");
            return NULL;
        }
        PyObject *callback = PyTuple_GET_ITEM(delivery, 0), *headers = PyTuple_GET_ITEM(delivery, 4);
        PyObject *offset_object;
        if (error != Py_None) {
            offset_object = PyLong_FromLong(-1001); /* OFFSET_INVALID */
        }
        else if (base_offset < 0) {
            offset_object = PyLong_FromLong(-1);
        }
        else {
            long long record_index = PyLong_AsLongLong(PyTuple_GET_ITEM(delivery, 1));
            offset_object = record_index == -1 && PyErr_Occurred() ? NULL : PyLong_FromLongLong(base_offset + record_index);
        }
        PyObject *latency = PyFloat_FromDouble(now - PyFloat_AsDouble(PyTuple_GET_ITEM(delivery, 6)));
        PyObject *header_tuple = headers == Py_None ? PyTuple_New(0) : PySequence_Tuple(headers);
        if (offset_object == NULL || latency == NULL || header_tuple == NULL || PyErr_Occurred()) {
            Py_XDECREF(offset_object);
            Py_XDECREF(latency);
            Py_XDECREF(header_tuple);
            Py_DECREF(delivery);
            return NULL;
        }
        PyObject *const values[M_SLOTS] = {
            [M_TOPIC] = Py_NewRef(topic),
            [M_PARTITION] = Py_NewRef(partition),
            [M_OFFSET] = offset_object,
            [M_TIMESTAMP] = Py_NewRef(log_append >= 0 ? log_append_time : PyTuple_GET_ITEM(delivery, 5)),
            [M_KEY] = Py_NewRef(PyTuple_GET_ITEM(delivery, 2)),
            [M_VALUE] = Py_NewRef(PyTuple_GET_ITEM(delivery, 3)),
            [M_HEADERS] = header_tuple,
            [M_TIMESTAMP_TYPE] = Py_NewRef(timestamp_type),
            [M_ERROR] = Py_NewRef(error),
            [M_LATENCY] = latency,
            [M_LEADER_EPOCH] = Py_NewRef(Py_None),
        };
        PyObject *message = new_message(values);
        if (message == NULL) {
            for (int slot = 0; slot < M_SLOTS; slot++) {
                Py_DECREF(values[slot]);
            }
            Py_DECREF(delivery);
            return NULL;
        }
        PyObject *call_args[2] = {error, message};
        PyObject *result = PyObject_Vectorcall(callback, call_args, 2, NULL);
        Py_DECREF(message);
        Py_DECREF(delivery);
        if (result == NULL) {
            return NULL;
        }
        Py_DECREF(result);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ producer: StickyAppender */

/* The producer's per-record path for the common record (weir.producer, weir.producer_accumulator):
 * a keyless record, no headers, no explicit partition, bytes value, to the topic whose sticky
 * partition has an open batch. The accumulator *arms* the appender with that batch (its records
 * buffer and counters) under its lock after a Python append; produce() then runs here: it takes the
 * accumulator's lock without blocking, encodes the record into the armed batch's buffer exactly as
 * RecordBatchBuilder.append would, and counts it. Anything else (another topic, a key, headers, a
 * batch without room, buffer.memory nearly used, changed metadata, a lock held by another thread)
 * goes to Producer.produce in Python, the reference, which disarms the appender first and may arm it
 * again. What the appender counted reaches the Python objects through take() (lock held). */

#define RECORD_OVERHEAD 21 /* weir.producer_accumulator.RECORD_OVERHEAD */

typedef struct {
    PyObject_HEAD
    PyObject *slow;            /* Producer.produce in Python, bound: every record the fast path declines */
    PyObject *cluster;         /* weir.cluster.Cluster: its .topics maps names to immutable TopicInfo */
    PyObject *lock_acquire;    /* the accumulator lock's bound acquire and release */
    PyObject *lock_release;
    PyObject *close_armed;     /* RecordAccumulator._close_armed: the armed batch is full (lock held) */
    PyObject *default_delivery; /* the on_delivery of the configuration, or None */
    long long message_max_bytes, batch_size, batch_max_records, buffer_memory;
    /* The armed batch; topic NULL when disarmed. */
    PyObject *topic, *info, *records, *deliveries;
    long long count, size, base_timestamp, max_timestamp, last_offset_delta, buffered;
    /* Appended since the last take(). */
    long long taken_count, added_records, added_bytes;
} StickyAppender;

static PyObject *str_topics = NULL;
static PyObject *produce_keywords[8] = {NULL};
static const char *const produce_keyword_names[8] = {"topic", "value", "key", "partition", "on_delivery", "callback", "timestamp", "headers"};

static void
appender_disarm(StickyAppender *self)
{
    Py_CLEAR(self->topic);
    Py_CLEAR(self->info);
    Py_CLEAR(self->records);
    Py_CLEAR(self->deliveries);
}

static int
appender_init(StickyAppender *self, PyObject *args, PyObject *kwargs)
{
    PyObject *slow, *cluster, *lock, *close_armed, *default_delivery;
    long long message_max_bytes, batch_size, batch_max_records, buffer_memory;
    if (!PyArg_ParseTuple(args, "OOOOOLLLL", &slow, &cluster, &lock, &close_armed, &default_delivery, &message_max_bytes, &batch_size, &batch_max_records,
                          &buffer_memory)) {
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
    Py_VISIT(self->records);
    Py_VISIT(self->deliveries);
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
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* arm(topic, info, records, deliveries, count, size, base_timestamp, max_timestamp, last_offset_delta,
 * buffered): keyless records of topic go to this batch until disarm() (accumulator lock held). */
static PyObject *
appender_arm(StickyAppender *self, PyObject *args)
{
    PyObject *topic, *info, *records, *deliveries;
    long long count, size, base_timestamp, max_timestamp, last_offset_delta, buffered;
    if (!PyArg_ParseTuple(args, "UOO!O!LLLLLL", &topic, &info, &PyByteArray_Type, &records, &PyList_Type, &deliveries, &count, &size, &base_timestamp,
                          &max_timestamp, &last_offset_delta, &buffered)) {
        return NULL;
    }
    appender_disarm(self);
    self->topic = Py_NewRef(topic);
    self->info = Py_NewRef(info);
    self->records = Py_NewRef(records);
    self->deliveries = Py_NewRef(deliveries);
    self->count = self->taken_count = count;
    self->size = size;
    self->base_timestamp = base_timestamp;
    self->max_timestamp = max_timestamp;
    self->last_offset_delta = last_offset_delta;
    self->buffered = buffered;
    self->added_records = self->added_bytes = 0;
    Py_RETURN_NONE;
}

/* take() -> (records added, bytes added, record count, max timestamp, last offset delta) since the
 * last take() or arm(); None when disarmed. The appender stays armed (accumulator lock held). */
static PyObject *
appender_take(StickyAppender *self, PyObject *unused)
{
    if (self->topic == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *result = Py_BuildValue("(LLLLL)", self->added_records, self->added_bytes, self->count, self->max_timestamp, self->last_offset_delta);
    if (result != NULL) {
        self->added_records = self->added_bytes = 0;
        self->taken_count = self->count;
    }
    return result;
}

/* disarm(): the armed batch takes no more records here (take() first: counts not taken are lost). */
static PyObject *
appender_disarm_method(StickyAppender *self, PyObject *unused)
{
    appender_disarm(self);
    Py_RETURN_NONE;
}

static PyObject *
appender_armed(StickyAppender *self, void *closure)
{
    return PyBool_FromLong(self->topic != NULL);
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

/* 1 when the record was appended, 0 when Python must take it (nothing changed), -1 on error.
 * Runs with the accumulator lock held. */
static int
appender_append(StickyAppender *self, PyObject *topic, PyObject *value, PyObject *timestamp_arg, PyObject *delivery)
{
    if (self->topic == NULL || (topic != self->topic && (!PyUnicode_CheckExact(topic) || PyUnicode_Compare(topic, self->topic) != 0))) {
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
    Py_ssize_t value_length = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
    long long size = value_length < 0 ? 0 : value_length;
    long long needed = size + RECORD_OVERHEAD;
    if (size > self->message_max_bytes || (self->buffered + needed > self->buffer_memory && self->buffered > 0) ||
        self->size + needed > self->batch_size || self->count >= self->batch_max_records) {
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
    long long offset_delta = self->last_offset_delta + 1;
    long long timestamp_delta;
    if (__builtin_sub_overflow(timestamp, self->base_timestamp, &timestamp_delta)) {
        return 0;
    }
    Py_ssize_t body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta) + 1 /* null key */;
    body += value_length < 0 ? 1 : varint_size(value_length) + value_length;
    body += 1; /* no headers */
    Py_ssize_t added = varint_size(body) + body;
    PyObject *report = NULL;
    if (delivery != Py_None) {
        /* weir.producer_accumulator.Delivery: (callback, index, key, value, headers, timestamp, produced at). */
        PyObject *index = PyLong_FromLongLong(self->count);
        PyObject *timestamp_object = PyLong_FromLongLong(timestamp);
        PyObject *produced_at = PyFloat_FromDouble(monotonic_seconds());
        report = PyTuple_New(7);
        if (index == NULL || timestamp_object == NULL || produced_at == NULL || report == NULL) {
            Py_XDECREF(index);
            Py_XDECREF(timestamp_object);
            Py_XDECREF(produced_at);
            Py_XDECREF(report);
            return -1;
        }
        PyTuple_SET_ITEM(report, 0, Py_NewRef(delivery)); /* each steals its reference */
        PyTuple_SET_ITEM(report, 1, index);
        PyTuple_SET_ITEM(report, 2, Py_NewRef(Py_None));
        PyTuple_SET_ITEM(report, 3, Py_NewRef(value));
        PyTuple_SET_ITEM(report, 4, Py_NewRef(Py_None));
        PyTuple_SET_ITEM(report, 5, timestamp_object);
        PyTuple_SET_ITEM(report, 6, produced_at);
        /* Hundreds of thousands of these wait for their acknowledgement: left to the cyclic
         * collector, each of its passes would walk them all (a fifth of produce()'s time with a
         * callback per record). A delivery record is freed when its report is served, and a cycle
         * through it (callback -> ... -> producer -> batch) is kept alive by the producer anyway. */
        PyObject_GC_UnTrack(report);
    }
    Py_ssize_t start = PyByteArray_GET_SIZE(self->records);
    if (grow_bytearray(self->records, start + added) < 0) {
        Py_XDECREF(report);
        return -1;
    }
    if (report != NULL) {
        int appended = PyList_Append(self->deliveries, report);
        Py_DECREF(report);
        if (appended < 0) {
            PyByteArray_Resize(self->records, start);
            return -1;
        }
    }
    uint8_t *out = (uint8_t *)PyByteArray_AS_STRING(self->records) + start;
    out = write_varint(out, body);
    *out++ = 0; /* attributes */
    out = write_varint(out, timestamp_delta);
    out = write_varint(out, offset_delta);
    out = write_varint(out, -1); /* null key */
    out = write_varint(out, value_length);
    if (value_length > 0) {
        memcpy(out, PyBytes_AS_STRING(value), value_length);
    }
    out += value_length > 0 ? value_length : 0;
    *out = 0; /* header count */
    self->count += 1;
    self->size += added;
    self->buffered += added;
    self->added_records += 1;
    self->added_bytes += added;
    self->last_offset_delta = offset_delta;
    if (timestamp > self->max_timestamp) {
        self->max_timestamp = timestamp;
    }
    if (self->size >= self->batch_size || self->count >= self->batch_max_records) {
        PyObject *closed = PyObject_CallNoArgs(self->close_armed); /* disarms */
        if (closed == NULL) {
            return -1;
        }
        Py_DECREF(closed);
    }
    return 1;
}

/* produce(topic, value=None, key=None, partition=-1, on_delivery=None, callback=None, timestamp=0,
 * headers=None): Producer.produce, here for the common record, else in Python. */
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
    PyObject *partition = given[3];
    plain = plain && PyUnicode_CheckExact(given[0]) && (value == Py_None || PyBytes_CheckExact(value)) && (given[2] == NULL || given[2] == Py_None) &&
            (given[7] == NULL || given[7] == Py_None) && (partition == NULL || (PyLong_CheckExact(partition) && PyLong_AsLong(partition) == -1)) &&
            (given[6] == NULL || PyLong_CheckExact(given[6]));
    if (PyErr_Occurred()) {
        PyErr_Clear(); /* a partition beyond a C long: Python's path says what it is */
        plain = 0;
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
    if (plain && self->topic != NULL) {
        PyObject *locked = PyObject_CallOneArg(self->lock_acquire, Py_False);
        if (locked == NULL) {
            return NULL;
        }
        int acquired = locked == Py_True;
        Py_DECREF(locked);
        if (acquired) {
            Py_INCREF(delivery);
            int appended = appender_append(self, given[0], value, given[6], delivery);
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
    {"produce", (PyCFunction)(void (*)(void))appender_produce, METH_FASTCALL | METH_KEYWORDS, "Producer.produce: the common record here, others in Python."},
    {"arm", (PyCFunction)appender_arm, METH_VARARGS,
     "arm(topic, info, records, deliveries, count, size, base_timestamp, max_timestamp, last_offset_delta, buffered) (accumulator lock held)."},
    {"take", (PyCFunction)appender_take, METH_NOARGS, "take() -> (records, bytes, count, max_timestamp, last_offset_delta) added since the last take(), or None."},
    {"disarm", (PyCFunction)appender_disarm_method, METH_NOARGS, "disarm(): the armed batch takes no more records here."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef appender_getset[] = {
    {"armed", (getter)appender_armed, NULL, "Whether a batch is armed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StickyAppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weir._records_native.StickyAppender",
    .tp_basicsize = sizeof(StickyAppender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "StickyAppender(slow_produce, cluster, lock, close_armed, default_delivery, message_max_bytes, batch_size, batch_max_records, buffer_memory)",
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
    if (PyType_Ready(&StickyAppenderType) < 0) {
        return NULL;
    }
    PyObject *module_object = PyModule_Create(&module);
    if (module_object == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module_object, "StickyAppender", (PyObject *)&StickyAppenderType) < 0) {
        Py_DECREF(module_object);
        return NULL;
    }
    return module_object;
}
