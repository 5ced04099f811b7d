/*
 * costart.store._chunkcheck: check a chunk of log records in one call (ADR 0155).
 *
 * `check(values, expect, prev, record_type)` takes the values an LMDB cursor read (a
 * list of bytes, in key order) and, for each in turn, checks what the plain scan
 * (`costart.store.record_layout.scan_plain`) checks:
 *
 *   - its BLAKE2b-128 checksum: the hash of every byte but the last 16 equals the last 16;
 *   - its envelope: a msgpack array of 7 [id, originator_id, originator_version, topic,
 *     state, prev, checksum], in the encodings the store writes (unsigned ints, a bin or
 *     a str originator, a str topic, bin state and prev, a 16-byte bin checksum last);
 *   - its position: id == expect (then expect + 1 for the next);
 *   - its chain link: prev equals the checksum before it (unchecked while `prev` is None).
 *
 * It builds a `record_type` (the LogRecord struct) from the fields of each record it
 * accepts, and stops at the first record it does not accept, for whatever reason: it
 * never raises for a record's bytes. It returns (records, last checksum or `prev`); the
 * caller reads the rest with the plain scan, which names the defect and its position
 * with its own words, or accepts a record written in an encoding this module does not
 * read (msgspec reads more than the store writes). So whatever this module accepts, the
 * plain scan accepts as the same record, and every error is the plain scan's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The BLAKE2 reference implementation, compiled into this module (blake2/SOURCE.md). */
#include "blake2/blake2b-ref.c"

#define CHECKSUM_SIZE 16
/* The checksum's msgpack header (bin 8, length 16) and payload end every record. */
#define TAIL_SIZE (2 + CHECKSUM_SIZE)

/* A record checksum's hash state before any bytes; copied per record. */
static blake2b_state fresh_state;

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} reader;

/* An unsigned msgpack int (positive fixint, uint 8/16/32/64). 0: not one. */
static int
read_uint(reader *r, unsigned long long *out)
{
    size_t n;
    unsigned long long v = 0;
    unsigned char b;
    if (r->p >= r->end) {
        return 0;
    }
    b = *r->p++;
    if (b <= 0x7f) {
        *out = b;
        return 1;
    }
    switch (b) {
    case 0xcc: n = 1; break;
    case 0xcd: n = 2; break;
    case 0xce: n = 4; break;
    case 0xcf: n = 8; break;
    default: return 0;
    }
    if ((size_t)(r->end - r->p) < n) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        v = (v << 8) | r->p[i];
    }
    r->p += n;
    *out = v;
    return 1;
}

/* The payload length after a header of `size` bytes of big-endian length. */
static int
read_length(reader *r, size_t size, size_t *out)
{
    size_t v = 0;
    if ((size_t)(r->end - r->p) < size) {
        return 0;
    }
    for (size_t i = 0; i < size; i++) {
        v = (v << 8) | r->p[i];
    }
    r->p += size;
    if ((size_t)(r->end - r->p) < v) {
        return 0;
    }
    *out = v;
    return 1;
}

/* A msgpack str (fixstr, str 8/16/32): its payload. 0: not one. */
static int
read_str(reader *r, const unsigned char **data, size_t *len)
{
    unsigned char b;
    if (r->p >= r->end) {
        return 0;
    }
    b = *r->p;
    if (b >= 0xa0 && b <= 0xbf) {
        r->p++;
        *len = b & 0x1f;
        if ((size_t)(r->end - r->p) < *len) {
            return 0;
        }
    }
    else if (b == 0xd9 || b == 0xda || b == 0xdb) {
        r->p++;
        if (!read_length(r, b == 0xd9 ? 1 : (b == 0xda ? 2 : 4), len)) {
            return 0;
        }
    }
    else {
        return 0;
    }
    *data = r->p;
    r->p += *len;
    return 1;
}

/* A msgpack bin (bin 8/16/32): its payload. 0: not one. */
static int
read_bin(reader *r, const unsigned char **data, size_t *len)
{
    unsigned char b;
    if (r->p >= r->end) {
        return 0;
    }
    b = *r->p;
    if (b != 0xc4 && b != 0xc5 && b != 0xc6) {
        return 0;
    }
    r->p++;
    if (!read_length(r, b == 0xc4 ? 1 : (b == 0xc5 ? 2 : 4), len)) {
        return 0;
    }
    *data = r->p;
    r->p += *len;
    return 1;
}

/* Topics repeat (a log has a few dozen): equal bytes give the one str made before. */
#define TOPIC_CACHE 64
static PyObject *topic_cache[TOPIC_CACHE];
static int topics_cached = 0;

static PyObject *
topic_str(const unsigned char *data, size_t len)
{
    for (int i = 0; i < topics_cached; i++) {
        PyObject *t = topic_cache[i];
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(t, &n);
        if (utf8 == NULL) {
            return NULL;  /* no memory for a non-ASCII topic's UTF-8 */
        }
        if ((size_t)n == len && memcmp(utf8, data, len) == 0) {
            Py_INCREF(t);
            return t;
        }
    }
    PyObject *t = PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)len, NULL);
    if (t != NULL && topics_cached < TOPIC_CACHE) {
        Py_INCREF(t);
        topic_cache[topics_cached++] = t;
    }
    return t;
}

/* The fields of one record, pointing into its bytes. */
typedef struct {
    unsigned long long id;
    int originator_is_str;
    const unsigned char *originator;
    size_t originator_len;
    unsigned long long version;
    const unsigned char *topic;
    size_t topic_len;
    const unsigned char *state;
    size_t state_len;
    const unsigned char *prev;
    size_t prev_len;
} fields;

/* Parse a record's envelope whose checksum matched. 0: not the store's encoding. */
static int
parse(const unsigned char *buf, size_t len, fields *f)
{
    reader r = {buf, buf + len - TAIL_SIZE};
    if (*r.p++ != 0x97) {
        return 0;
    }
    if (!read_uint(&r, &f->id)) {
        return 0;
    }
    if (r.p < r.end && *r.p >= 0xc4 && *r.p <= 0xc6) {
        f->originator_is_str = 0;
        if (!read_bin(&r, &f->originator, &f->originator_len)) {
            return 0;
        }
    }
    else {
        f->originator_is_str = 1;
        if (!read_str(&r, &f->originator, &f->originator_len)) {
            return 0;
        }
    }
    if (!read_uint(&r, &f->version)
        || !read_str(&r, &f->topic, &f->topic_len)
        || !read_bin(&r, &f->state, &f->state_len)
        || !read_bin(&r, &f->prev, &f->prev_len)) {
        return 0;
    }
    /* Nothing between prev and the checksum, which is a 16-byte bin last. */
    return r.p == r.end && r.end[0] == 0xc4 && r.end[1] == CHECKSUM_SIZE;
}

/* The record's LogRecord, or NULL with `*rejected` set (a UTF-8 error: the plain scan
 * names it) or an exception set (memory). `prev` is reused as the record's prev;
 * `*checksum_out` gets a new reference to the record's checksum object. */
static PyObject *
build(PyObject *record_type, const fields *f, const unsigned char *checksum,
      PyObject *prev, PyObject **checksum_out, int *rejected)
{
    PyObject *args[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    PyObject *record = NULL;
    if (f->originator_is_str) {
        args[1] = PyUnicode_DecodeUTF8((const char *)f->originator,
                                       (Py_ssize_t)f->originator_len, NULL);
    }
    else {
        args[1] = PyBytes_FromStringAndSize((const char *)f->originator,
                                            (Py_ssize_t)f->originator_len);
    }
    if (args[1] == NULL) {
        goto fail;
    }
    args[3] = topic_str(f->topic, f->topic_len);
    if (args[3] == NULL) {
        goto fail;
    }
    args[0] = PyLong_FromUnsignedLongLong(f->id);
    args[2] = PyLong_FromUnsignedLongLong(f->version);
    args[4] = PyBytes_FromStringAndSize((const char *)f->state, (Py_ssize_t)f->state_len);
    if (prev != NULL) {
        Py_INCREF(prev);
        args[5] = prev;
    }
    else {
        args[5] = PyBytes_FromStringAndSize((const char *)f->prev, (Py_ssize_t)f->prev_len);
    }
    args[6] = PyBytes_FromStringAndSize((const char *)checksum, CHECKSUM_SIZE);
    if (args[0] == NULL || args[2] == NULL || args[4] == NULL || args[5] == NULL
        || args[6] == NULL) {
        goto done;
    }
    record = PyObject_Vectorcall(record_type, args, 7, NULL);
    if (record != NULL) {
        Py_INCREF(args[6]);
        *checksum_out = args[6];
    }
    goto done;
fail:
    if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        *rejected = 1;
    }
done:
    for (int i = 0; i < 7; i++) {
        Py_XDECREF(args[i]);
    }
    return record;
}

static PyObject *
check(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *values, *prev, *record_type, *records, *result;
    unsigned long long expect;
    Py_ssize_t n;

    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "check(values, expect, prev, record_type)");
        return NULL;
    }
    values = args[0];
    prev = args[2];
    record_type = args[3];
    if (!PyList_CheckExact(values)) {
        PyErr_SetString(PyExc_TypeError, "values must be a list of bytes");
        return NULL;
    }
    if (prev != Py_None && !PyBytes_CheckExact(prev)) {
        PyErr_SetString(PyExc_TypeError, "prev must be bytes or None");
        return NULL;
    }
    expect = PyLong_AsUnsignedLongLong(args[1]);
    if (expect == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    n = PyList_GET_SIZE(values);
    records = PyList_New(0);
    if (records == NULL) {
        return NULL;
    }
    Py_INCREF(prev);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        const unsigned char *buf;
        size_t len;
        unsigned char digest[CHECKSUM_SIZE];
        blake2b_state state;
        fields f;
        PyObject *record, *checksum = NULL;
        int rejected = 0;

        if (!PyBytes_CheckExact(value)) {
            PyErr_SetString(PyExc_TypeError, "values must be a list of bytes");
            goto error;
        }
        buf = (const unsigned char *)PyBytes_AS_STRING(value);
        len = (size_t)PyBytes_GET_SIZE(value);
        if (len < 1 + TAIL_SIZE) {
            break;
        }
        memcpy(&state, &fresh_state, sizeof state);
        blake2b_update(&state, buf, len - CHECKSUM_SIZE);
        blake2b_final(&state, digest, CHECKSUM_SIZE);
        if (memcmp(digest, buf + len - CHECKSUM_SIZE, CHECKSUM_SIZE) != 0) {
            break;
        }
        if (!parse(buf, len, &f) || f.id != expect) {
            break;
        }
        if (prev != Py_None
            && ((size_t)PyBytes_GET_SIZE(prev) != f.prev_len
                || memcmp(PyBytes_AS_STRING(prev), f.prev, f.prev_len) != 0)) {
            break;
        }
        record = build(record_type, &f, buf + len - CHECKSUM_SIZE,
                       prev == Py_None ? NULL : prev, &checksum, &rejected);
        if (record == NULL) {
            if (rejected) {
                break;
            }
            goto error;
        }
        /* The next record's link: this record's checksum, the object just stored. */
        Py_DECREF(prev);
        prev = checksum;
        if (PyList_Append(records, record) < 0) {
            Py_DECREF(record);
            goto error;
        }
        Py_DECREF(record);
        expect++;
    }
    result = PyTuple_Pack(2, records, prev);
    Py_DECREF(records);
    Py_DECREF(prev);
    return result;
error:
    Py_DECREF(records);
    Py_DECREF(prev);
    return NULL;
}

static PyMethodDef methods[] = {
    {"check", (PyCFunction)(void (*)(void))check, METH_FASTCALL,
     "check(values, expect, prev, record_type) -> (records, prev): the records of\n"
     "`values` up to the first the plain scan must read (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "costart.store._chunkcheck",
    "Checks a chunk of log records in one call (ADR 0155).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__chunkcheck(void)
{
    if (blake2b_init(&fresh_state, CHECKSUM_SIZE) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "BLAKE2b initialisation failed");
        return NULL;
    }
    return PyModule_Create(&module);
}
