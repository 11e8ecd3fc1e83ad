/* Plain JSON in RFC 8785 form (sorted) or in a dict's own order: the bytes verify/jcs.py's
 * encode_plain and api/responses.py's dumps_plain write, for the values they call plain. */
#include "native.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SAFE_INTEGER 9007199254740991LL /* 2**53 - 1: RFC 8785 §3.2.2.3, I-JSON */
#define MAX_DEPTH 64                        /* deeper values take the Python path */
#define STACK_MEMBERS 24

int buf_reserve(Buf *buf, Py_ssize_t extra) {
    if (buf->len + extra <= buf->cap) {
        return 0;
    }
    Py_ssize_t cap = buf->cap ? buf->cap : 1024;
    while (cap < buf->len + extra) {
        cap *= 2;
    }
    char *grown = PyMem_Realloc(buf->data, (size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    buf->data = grown;
    buf->cap = cap;
    return 0;
}

int buf_put(Buf *buf, const char *bytes, Py_ssize_t size) {
    if (buf_reserve(buf, size) < 0) {
        return FAILED;
    }
    memcpy(buf->data + buf->len, bytes, (size_t)size);
    buf->len += size;
    return 0;
}

int buf_put_bytes(Buf *buf, PyObject *bytes) {
    return buf_put(buf, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

void buf_free(Buf *buf) {
    PyMem_Free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* The UTF-8 of an exact str (NOT_PLAIN for a lone surrogate, as the fast path refuses it). */
static int utf8_of(PyObject *text, const char **utf8, Py_ssize_t *size) {
    *utf8 = PyUnicode_AsUTF8AndSize(text, size);
    if (*utf8 != NULL) {
        return PLAIN;
    }
    if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        return NOT_PLAIN;
    }
    return FAILED;
}

static int put_string(Buf *buf, PyObject *text) {
    const char *utf8;
    Py_ssize_t size;
    int state = utf8_of(text, &utf8, &size);
    if (state != PLAIN) {
        return state;
    }
    if (buf_reserve(buf, 6 * size + 2) < 0) { /* every byte a \u00xx at worst */
        return FAILED;
    }
    static const char hex[] = "0123456789abcdef";
    char *out = buf->data + buf->len;
    *out++ = '"';
    for (Py_ssize_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)utf8[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        default:
            memcpy(out, "u00", 3);
            out[3] = hex[c >> 4];
            out[4] = hex[c & 15];
            out += 5;
        }
    }
    *out++ = '"';
    buf->len = out - buf->data;
    return PLAIN;
}

static int put_int(Buf *buf, PyObject *number) {
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        return FAILED;
    }
    if (overflow || value > MAX_SAFE_INTEGER || value < -MAX_SAFE_INTEGER) {
        return NOT_PLAIN;
    }
    char text[24];
    int size = snprintf(text, sizeof text, "%lld", value);
    return buf_put(buf, text, size) < 0 ? FAILED : PLAIN;
}

typedef struct {
    const char *key;
    Py_ssize_t size;
    PyObject *name;
    PyObject *value;
} Member;

static int by_key(const void *a, const void *b) {
    const Member *x = a, *y = b;
    Py_ssize_t common = x->size < y->size ? x->size : y->size;
    int order = memcmp(x->key, y->key, (size_t)common); /* UTF-8 order is code point order */
    if (order != 0) {
        return order;
    }
    return (x->size > y->size) - (x->size < y->size);
}

static int encode(Buf *buf, PyObject *value, int sorted, PyObject *skip, int depth);

static int put_members(Buf *buf, Member *members, Py_ssize_t count, int sorted, int depth) {
    if (sorted) {
        qsort(members, (size_t)count, sizeof(Member), by_key);
    }
    if (buf_put(buf, "{", 1) < 0) {
        return FAILED;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i && buf_put(buf, ",", 1) < 0) {
            return FAILED;
        }
        int state = put_string(buf, members[i].name);
        if (state == PLAIN && buf_put(buf, ":", 1) < 0) {
            return FAILED;
        }
        if (state == PLAIN) {
            state = encode(buf, members[i].value, sorted, NULL, depth + 1);
        }
        if (state != PLAIN) {
            return state;
        }
    }
    return buf_put(buf, "}", 1) < 0 ? FAILED : PLAIN;
}

/* A key is plain if it is an exact str with no character past the BMP (UTF-16 order is then
 * code point order); members named in ``skip`` are left out. */
static int collect(PyObject *dict, PyObject *skip, Member *members, Py_ssize_t *count) {
    Py_ssize_t position = 0;
    PyObject *name, *value;
    *count = 0;
    while (PyDict_Next(dict, &position, &name, &value)) {
        if (!PyUnicode_CheckExact(name) || PyUnicode_KIND(name) == PyUnicode_4BYTE_KIND) {
            return NOT_PLAIN; /* a 4-byte kind holds a character past U+FFFF */
        }
        if (skip != NULL) {
            int skipped = PySet_Contains(skip, name);
            if (skipped < 0) {
                return FAILED;
            }
            if (skipped) {
                continue;
            }
        }
        Member *member = &members[(*count)++];
        int state = utf8_of(name, &member->key, &member->size);
        if (state != PLAIN) {
            return state;
        }
        member->name = name;
        member->value = value;
    }
    return PLAIN;
}

static int put_dict(Buf *buf, PyObject *dict, int sorted, PyObject *skip, int depth) {
    Py_ssize_t size = PyDict_GET_SIZE(dict), count;
    Member local[STACK_MEMBERS];
    Member *members = size <= STACK_MEMBERS ? local : PyMem_Malloc(sizeof(Member) * size);
    if (members == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    int state = collect(dict, skip, members, &count);
    if (state == PLAIN) {
        state = put_members(buf, members, count, sorted, depth);
    }
    if (members != local) {
        PyMem_Free(members);
    }
    return state;
}

static int put_list(Buf *buf, PyObject *list, int sorted, int depth) {
    if (buf_put(buf, "[", 1) < 0) {
        return FAILED;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        if (i && buf_put(buf, ",", 1) < 0) {
            return FAILED;
        }
        int state = encode(buf, PyList_GET_ITEM(list, i), sorted, NULL, depth + 1);
        if (state != PLAIN) {
            return state;
        }
    }
    return buf_put(buf, "]", 1) < 0 ? FAILED : PLAIN;
}

static int encode(Buf *buf, PyObject *value, int sorted, PyObject *skip, int depth) {
    if (depth > MAX_DEPTH) {
        return NOT_PLAIN;
    }
    if (PyUnicode_CheckExact(value)) {
        return put_string(buf, value);
    }
    if (value == Py_None || value == Py_True || value == Py_False) {
        const char *word = value == Py_None ? "null" : value == Py_True ? "true" : "false";
        return buf_put(buf, word, (Py_ssize_t)strlen(word)) < 0 ? FAILED : PLAIN;
    }
    if (PyLong_CheckExact(value)) {
        return put_int(buf, value);
    }
    if (PyDict_CheckExact(value)) {
        return put_dict(buf, value, sorted, skip, depth);
    }
    if (PyList_CheckExact(value)) {
        return put_list(buf, value, sorted, depth);
    }
    return NOT_PLAIN; /* a float, a tuple, a subclass: the Python path decides */
}

int encode_json(Buf *buf, PyObject *value, int sorted, PyObject *skip) {
    return encode(buf, value, sorted, skip, 0);
}
