/* The recorder's native path: a plain ledger entry's bytes and the Merkle frontier.
 *
 * Nothing here decides: entry_bytes writes the same RFC 8785 bytes as
 * ledger/lease/entries.py's encode_entry for a plain entry and declines (None) for any other,
 * and Frontier keeps the same compact range as verify/compact.py's CompactRange (RFC 9162
 * §2.1.1). tests/test_native_record.py holds both to their Python references. SHA-256 is
 * OpenSSL's, found at import in the libcrypto the interpreter's hashlib uses (no build-time
 * dependency); without it the module has no Frontier and the recorder stays in Python. */
#include "native.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

/* OpenSSL's low-level SHA-256 (SHA256_Init/Update/Final): its one-shot SHA256() goes through
 * EVP_Q_digest in OpenSSL 3, which fetches the algorithm on every call, several times the cost
 * of hashing a node's 65 bytes. The context is opaque here; OpenSSL's is 112 bytes. */
typedef struct {
    _Alignas(16) unsigned char opaque[256];
} Sha256Context;
typedef int (*Sha256Init)(Sha256Context *);
typedef int (*Sha256Update)(Sha256Context *, const void *, size_t);
typedef int (*Sha256Final)(unsigned char *, Sha256Context *);
static Sha256Init sha256_init = NULL;
static Sha256Update sha256_update = NULL;
static Sha256Final sha256_final = NULL;

int record_sha256(void) {
    static const char *names[] = {"libcrypto.so.3", "libcrypto.so", NULL};
    for (int i = 0; names[i] != NULL && sha256_final == NULL; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            continue;
        }
        sha256_init = (Sha256Init)dlsym(lib, "SHA256_Init");
        sha256_update = (Sha256Update)dlsym(lib, "SHA256_Update");
        sha256_final = (Sha256Final)dlsym(lib, "SHA256_Final");
        if (sha256_init == NULL || sha256_update == NULL || sha256_final == NULL) {
            sha256_init = NULL, sha256_update = NULL, sha256_final = NULL;
            dlclose(lib);
        }
    }
    return sha256_final != NULL;
}

/* SHA-256 of ``prefix`` (one byte) followed by ``size`` bytes of ``data``: RFC 9162's hashes. */
static void sha256_of(unsigned char prefix, const void *data, size_t size, unsigned char *out) {
    Sha256Context context;
    sha256_init(&context);
    sha256_update(&context, &prefix, 1);
    sha256_update(&context, data, size);
    sha256_final(out, &context);
}

/* -- entry bytes ------------------------------------------------------------------------- */

static const long long MAX_SAFE_INTEGER = 9007199254740991LL;
static const long long END_OF_9999_MS = 253402300800000LL; /* 10000-01-01T00:00:00Z */

/* ``value``'s last ``width`` decimal digits, zero-padded (snprintf costs more than the entry). */
static void digits(char *out, unsigned long long value, int width) {
    for (int i = width - 1; i >= 0; i--, value /= 10) {
        out[i] = (char)('0' + value % 10);
    }
}

/* ms since the epoch as ledger/log/text.py's iso writes it: "YYYY-MM-DDTHH:MM:SS.mmmZ" (24
 * characters), for 1970 to 9999 (the caller declines the rest). */
static void iso(long long ms, char *out) {
    long long seconds = ms / 1000, days = seconds / 86400;
    int millis = (int)(ms % 1000), second_of_day = (int)(seconds % 86400);
    long long z = days + 719468; /* H. Hinnant's civil_from_days, z >= 0 here */
    long long era = z / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = (long long)yoe + era * 400 + (month <= 2);
    digits(out, (unsigned long long)year, 4);
    out[4] = '-';
    digits(out + 5, month, 2);
    out[7] = '-';
    digits(out + 8, day, 2);
    out[10] = 'T';
    digits(out + 11, (unsigned long long)second_of_day / 3600, 2);
    out[13] = ':';
    digits(out + 14, (unsigned long long)second_of_day / 60 % 60, 2);
    out[16] = ':';
    digits(out + 17, (unsigned long long)second_of_day % 60, 2);
    out[19] = '.';
    digits(out + 20, (unsigned long long)millis, 3);
    out[23] = 'Z';
}

/* An int within +-(2**53 - 1) into *out; 0 if it is not one (the entry is not plain). */
static int safe_int(PyObject *value, long long *out) {
    if (!PyLong_CheckExact(value)) {
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return -MAX_SAFE_INTEGER <= v && v <= MAX_SAFE_INTEGER;
}

/* A str RFC 8785 writes as it is and the entry allows: ASCII letters, digits and ``_.:-``
 * (a trigger's words, pseudonyms and digests in hex, an event kind). */
static const char *plain_text(PyObject *value, Py_ssize_t *size) {
    if (!PyUnicode_CheckExact(value) || !PyUnicode_IS_ASCII(value)) {
        return NULL;
    }
    const char *text = (const char *)PyUnicode_DATA(value);
    *size = PyUnicode_GET_LENGTH(value);
    for (Py_ssize_t i = 0; i < *size; i++) {
        char c = text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-')) {
            return NULL;
        }
    }
    return text;
}

static int put_text(Buf *buf, const char *prefix, PyObject *value) {
    Py_ssize_t size = 0;
    const char *text = plain_text(value, &size);
    if (text == NULL) {
        return NOT_PLAIN;
    }
    if (buf_put(buf, prefix, (Py_ssize_t)strlen(prefix)) < 0 || buf_put(buf, text, size) < 0 ||
        buf_put(buf, "\"", 1) < 0) {
        return FAILED;
    }
    return PLAIN;
}

static int put_int(Buf *buf, const char *prefix, long long value) {
    char text[48];
    size_t head = strlen(prefix);
    unsigned long long magnitude = (unsigned long long)value;
    if (value < 0) {
        magnitude = 0ULL - magnitude;
    }
    int width = 1;
    for (unsigned long long rest = magnitude / 10; rest > 0; rest /= 10) {
        width++;
    }
    memcpy(text, prefix, head);
    if (value < 0) {
        text[head++] = '-';
    }
    digits(text + head, magnitude, width);
    return buf_put(buf, text, (Py_ssize_t)head + width) < 0 ? FAILED : PLAIN;
}

static int put_time(Buf *buf, const char *prefix, long long ms) {
    char text[64];
    size_t head = strlen(prefix);
    memcpy(text, prefix, head);
    iso(ms, text + head);
    text[head + 24] = '"';
    return buf_put(buf, text, (Py_ssize_t)head + 25) < 0 ? FAILED : PLAIN;
}

static int put_hex(Buf *buf, const char *prefix, PyObject *digest) {
    static const char digits[] = "0123456789abcdef";
    if (!PyBytes_CheckExact(digest) || PyBytes_GET_SIZE(digest) > 64) {
        return NOT_PLAIN;
    }
    char text[160];
    size_t head = strlen(prefix);
    const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(digest);
    Py_ssize_t size = PyBytes_GET_SIZE(digest);
    memcpy(text, prefix, head);
    for (Py_ssize_t i = 0; i < size; i++) {
        text[head + 2 * i] = digits[bytes[i] >> 4];
        text[head + 2 * i + 1] = digits[bytes[i] & 15];
    }
    text[head + 2 * size] = '"';
    return buf_put(buf, text, (Py_ssize_t)head + 2 * size + 1) < 0 ? FAILED : PLAIN;
}

#define TRY(step)                                                                                \
    do {                                                                                         \
        int state_ = (step);                                                                     \
        if (state_ != PLAIN) {                                                                   \
            return state_;                                                                       \
        }                                                                                        \
    } while (0)

/* The arguments, in entry_bytes's order (ledger/_native.pyi). */
enum { INDEX, KIND, CAPACITY, TOKEN, LEASE_ID, TIME, EXPIRES, LIFECYCLE, TENANT, RESOURCE,
       HOLDER, OWNER_DIGEST, SCOPE, TRIGGER, RESULT, ENTRY_ARGS };

static int write_entry(Buf *buf, PyObject *const *args) {
    long long ints[LIFECYCLE + 1];
    for (int i = INDEX; i <= LIFECYCLE; i++) {
        if (i == KIND) {
            continue;
        }
        if (!safe_int(args[i], &ints[i])) {
            return NOT_PLAIN;
        }
    }
    for (int i = TIME; i <= LIFECYCLE; i++) {
        if (ints[i] < 0 || ints[i] >= END_OF_9999_MS) {
            return NOT_PLAIN;
        }
    }
    TRY(put_time(buf, "{\"absoluteExpiresAt\":\"", ints[LIFECYCLE]));
    TRY(put_int(buf, ",\"capacity\":", ints[CAPACITY]));
    TRY(put_time(buf, ",\"expiresAt\":\"", ints[EXPIRES]));
    TRY(put_int(buf, ",\"fencingToken\":", ints[TOKEN]));
    TRY(put_text(buf, ",\"holder\":\"", args[HOLDER]));
    TRY(put_int(buf, ",\"index\":", ints[INDEX]));
    TRY(put_text(buf, ",\"kind\":\"", args[KIND]));
    TRY(put_int(buf, ",\"leaseId\":", ints[LEASE_ID]));
    TRY(put_hex(buf, ",\"ownerTokenDigest\":\"", args[OWNER_DIGEST]));
    TRY(put_text(buf, ",\"resource\":\"", args[RESOURCE]));
    if (args[RESULT] != Py_None) {
        TRY(put_text(buf, ",\"resultDigest\":\"", args[RESULT]));
    }
    if (args[SCOPE] != Py_None) {
        TRY(put_text(buf, ",\"scope\":\"", args[SCOPE]));
    }
    TRY(put_text(buf, ",\"tenant\":\"", args[TENANT]));
    TRY(put_time(buf, ",\"time\":\"", ints[TIME]));
    if (args[TRIGGER] != Py_None) {
        TRY(put_text(buf, ",\"trigger\":\"", args[TRIGGER]));
    }
    return buf_put(buf, ",\"v\":1}", 7) < 0 ? FAILED : PLAIN;
}

PyObject *entry_bytes(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != ENTRY_ARGS) {
        PyErr_Format(PyExc_TypeError, "entry_bytes takes %d arguments, not %zd", ENTRY_ARGS,
                     nargs);
        return NULL;
    }
    Buf buf = {0};
    if (buf_reserve(&buf, 512) < 0) {
        return NULL;
    }
    int state = write_entry(&buf, args);
    PyObject *made = state == PLAIN ? PyBytes_FromStringAndSize(buf.data, buf.len) : NULL;
    buf_free(&buf);
    if (state == NOT_PLAIN) {
        Py_RETURN_NONE;
    }
    return made;
}

/* -- the Merkle frontier ----------------------------------------------------------------- */

enum { MAX_LEVELS = 64 };

typedef struct {
    PyObject_HEAD
    unsigned long long size;
    int count; /* perfect subtrees: one per set bit of size */
    unsigned char hashes[MAX_LEVELS][32];
} Frontier;

static void node_hash(const unsigned char *left, const unsigned char *right, unsigned char *out) {
    unsigned char joined[64];
    memcpy(joined, left, 32);
    memcpy(joined + 32, right, 32);
    sha256_of(1, joined, sizeof joined, out); /* RFC 9162 §2.1.1: SHA-256(0x01 || l || r) */
}

static PyObject *frontier_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *given = NULL, *hashes = NULL;
    static char *keywords[] = {"size", "hashes", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!:Frontier", keywords, &PyLong_Type,
                                     &given, &PyList_Type, &hashes)) {
        return NULL;
    }
    unsigned long long size = PyLong_AsUnsignedLongLong(given); /* negative: OverflowError */
    if (size == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(hashes);
    if (count != __builtin_popcountll(size)) {
        PyErr_SetString(PyExc_ValueError, "Frontier: one hash per set bit of size");
        return NULL;
    }
    Frontier *self = (Frontier *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *hash = PyList_GET_ITEM(hashes, i);
        if (!PyBytes_CheckExact(hash) || PyBytes_GET_SIZE(hash) != 32) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "Frontier: hashes are 32 bytes each");
            return NULL;
        }
        memcpy(self->hashes[i], PyBytes_AS_STRING(hash), 32);
    }
    self->size = size;
    self->count = (int)count;
    return (PyObject *)self;
}

/* Append a leaf's hash; the new perfect nodes (level, idx, hash), the leaf first, as
 * CompactRange.append returns them. */
static PyObject *frontier_push(Frontier *self, const unsigned char *leaf) {
    if (self->size == UINT64_MAX) {
        PyErr_SetString(PyExc_OverflowError, "Frontier: the tree is full");
        return NULL;
    }
    PyObject *nodes = PyList_New(0);
    if (nodes == NULL) {
        return NULL;
    }
    unsigned char hash[32];
    unsigned long long idx = self->size;
    int level = 0;
    memcpy(hash, leaf, 32);
    for (;;) {
        PyObject *node = Py_BuildValue("(iKy#)", level, idx, (const char *)hash, (Py_ssize_t)32);
        if (node == NULL || PyList_Append(nodes, node) < 0) {
            Py_XDECREF(node);
            Py_DECREF(nodes);
            return NULL;
        }
        Py_DECREF(node);
        if (!(idx & 1)) {
            break;
        }
        node_hash(self->hashes[--self->count], hash, hash);
        level++;
        idx >>= 1;
    }
    memcpy(self->hashes[self->count++], hash, 32);
    self->size++;
    return nodes;
}

static PyObject *frontier_append(Frontier *self, PyObject *leaf) {
    if (!PyBytes_CheckExact(leaf) || PyBytes_GET_SIZE(leaf) != 32) {
        PyErr_SetString(PyExc_ValueError, "Frontier.append: a leaf hash is 32 bytes");
        return NULL;
    }
    return frontier_push(self, (const unsigned char *)PyBytes_AS_STRING(leaf));
}

static PyObject *frontier_append_entry(Frontier *self, PyObject *entry) {
    if (!PyBytes_CheckExact(entry)) {
        PyErr_SetString(PyExc_TypeError, "Frontier.append_entry: an entry is bytes");
        return NULL;
    }
    unsigned char leaf[32]; /* RFC 9162 §2.1.1: MTH({d}) = SHA-256(0x00 || d) */
    sha256_of(0, PyBytes_AS_STRING(entry), (size_t)PyBytes_GET_SIZE(entry), leaf);
    PyObject *nodes = frontier_push(self, leaf);
    if (nodes == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("(y#N)", (const char *)leaf, (Py_ssize_t)32, nodes);
    return result;
}

static PyObject *frontier_root(Frontier *self, PyObject *unused) {
    unsigned char acc[32];
    if (self->count == 0) {
        Sha256Context context; /* the empty tree's root: SHA-256 of nothing */
        sha256_init(&context);
        sha256_final(acc, &context);
    } else {
        memcpy(acc, self->hashes[self->count - 1], 32);
        for (int i = self->count - 2; i >= 0; i--) {
            node_hash(self->hashes[i], acc, acc);
        }
    }
    return PyBytes_FromStringAndSize((const char *)acc, 32);
}

static PyObject *frontier_hashes(Frontier *self, PyObject *unused) {
    PyObject *hashes = PyList_New(self->count);
    for (int i = 0; hashes != NULL && i < self->count; i++) {
        PyObject *hash = PyBytes_FromStringAndSize((const char *)self->hashes[i], 32);
        if (hash == NULL) {
            Py_CLEAR(hashes);
            break;
        }
        PyList_SET_ITEM(hashes, i, hash);
    }
    return hashes;
}

static PyObject *frontier_size(Frontier *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->size);
}

static PyMethodDef frontier_methods[] = {
    {"append", (PyCFunction)frontier_append, METH_O,
     "append(leaf_hash)\n--\n\nAdd a leaf; the new perfect nodes (level, idx, hash)."},
    {"append_entry", (PyCFunction)frontier_append_entry, METH_O,
     "append_entry(entry)\n--\n\nAdd an entry's leaf; (its leaf hash, the new nodes)."},
    {"root", (PyCFunction)frontier_root, METH_NOARGS,
     "root()\n--\n\nMTH of the current tree (RFC 9162 §2.1.1)."},
    {"hashes", (PyCFunction)frontier_hashes, METH_NOARGS,
     "hashes()\n--\n\nThe perfect subtrees' hashes, largest first."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef frontier_getset[] = {
    {"size", (getter)frontier_size, NULL, "The tree's size (leaves).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject FrontierType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ledger._native.Frontier",
    .tp_basicsize = sizeof(Frontier),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The compact range of RFC 9162 §2.1.1 (see ledger/_native.pyi).",
    .tp_methods = frontier_methods,
    .tp_getset = frontier_getset,
    .tp_new = frontier_new,
};
