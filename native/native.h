/* tenure's native answer path: shared declarations of ledger/_native's sources.
 *
 * Nothing here decides what an answer says: it writes, in one pass of C, the same bytes the
 * Python issuer (ledger/provenance.py) and api/responses.py write for a plain answer, and
 * declines (returns NOT_PLAIN) wherever the Python path would take another road. */
#ifndef TENURE_NATIVE_H
#define TENURE_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* What an encoder returns: the bytes were written, the value is not plain JSON (the caller
 * falls back to the Python path), or a Python exception is set. */
#define PLAIN 0
#define NOT_PLAIN 1
#define FAILED (-1)

/* A growable byte buffer. */
typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

int buf_reserve(Buf *buf, Py_ssize_t extra);
int buf_put(Buf *buf, const char *bytes, Py_ssize_t size);
int buf_put_bytes(Buf *buf, PyObject *bytes); /* an exact bytes object */
void buf_free(Buf *buf);

/* The JSON of ``value`` if it is plain (verify/jcs.py's is_plain: exact dict, list, str, bool,
 * None and int within +-(2**53 - 1); string keys within the BMP; no lone surrogate): compact,
 * strings escaped as RFC 8785 and json.dumps(ensure_ascii=False) escape them. ``sorted``
 * writes dict members in RFC 8785 order (for BMP keys, code point order); otherwise in the
 * dict's own order, as orjson.dumps does. ``skip``, if not NULL, is a set of keys left out of
 * the outermost dict. */
int encode_json(Buf *buf, PyObject *value, int sorted, PyObject *skip);

/* Base64 (RFC 4648 §4, padded) of 32 bytes: 44 characters. */
void base64_32(const unsigned char *digest, char *out);

/* Base58btc (the Bitcoin alphabet) of ``size`` <= 64 bytes into ``out`` (room for 90);
 * returns the number of characters written. */
Py_ssize_t base58(const unsigned char *bytes, Py_ssize_t size, char *out);

/* An answer's envelope writer, made once per signing key (ledger/_native.pyi). */
typedef struct {
    PyObject_HEAD
    PyObject *frame[3];  /* the credential's canonical bytes before/between/after (provenance.py) */
    PyObject *proof[5];  /* the proof configuration's template (signer.py's _Template) */
    PyObject *sha256;    /* hashlib.sha256 */
    PyObject *sign;      /* bytes -> the 64-byte Ed25519 signature */
    PyObject *secrets;   /* frozenset: data members the credential leaves out */
    PyObject *parts;     /* tuple: data members the subject states, in order */
    PyObject *labels[2]; /* the request's and the data's assertion labels */
    PyObject *generator; /* the manifest's claimGenerator */
    PyObject *stamp;     /* the last created stamp, and its configuration hash */
    unsigned char config_hash[32];
} Answerer;

int answer_names(void); /* the subject's and manifest's member names, made once */
PyObject *answerer_envelope(Answerer *self, PyObject *const *args, Py_ssize_t nargs);

/* The recorder's native path (record.c): a plain entry's bytes, and the Merkle frontier type,
 * made only where record_sha256() found OpenSSL's SHA256 (returns 1). */
int record_sha256(void);
PyObject *entry_bytes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern PyTypeObject FrontierType;

#endif
