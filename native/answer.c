/* ledger._native: an answer's envelope and its eddsa-jcs-2022 credential in one call.
 *
 * Answerer.envelope writes the bytes api/responses.respond writes for a plain answer —
 * {"data": ..., "_provenance": credential} — with the credential spliced exactly as
 * ledger/lease/provenance.Issuer.issue_json and ledger/keys/signer.Signer.sign_jcs_text splice it: the same
 * frame, the same proof template, the same subject and manifest. SHA-256 and Ed25519 are the
 * Python callables the issuer hands over (OpenSSL's and libsodium's, through hashlib and the
 * signer); this file only writes bytes. It returns None wherever the Python path would not
 * write a plain answer, and the caller then takes that path. tests/test_native_answer.py checks
 * the bytes against the Python path's. */
#include "native.h"

#include <string.h>

static PyObject *K_TYPE, *K_LEASE_ANSWER, *K_PSEUDONYMS, *K_MANIFEST, *K_CLAIM, *K_ALG,
    *K_SHA256, *K_ASSERTIONS, *K_LABEL, *K_HASH;

int answer_names(void) {
    static const char *texts[] = {"type", "LeaseAnswer", "pseudonyms", "manifest",
                                  "claimGenerator", "alg", "sha256", "assertions", "label",
                                  "hash"};
    PyObject **names[] = {&K_TYPE, &K_LEASE_ANSWER, &K_PSEUDONYMS, &K_MANIFEST, &K_CLAIM,
                          &K_ALG, &K_SHA256, &K_ASSERTIONS, &K_LABEL, &K_HASH};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i] = PyUnicode_InternFromString(texts[i]);
        if (*names[i] == NULL) {
            return FAILED;
        }
    }
    return PLAIN;
}

/* SHA-256 of ``size`` bytes at ``bytes`` into ``out`` (32 bytes), by the hashlib callable. */
static int sha256(Answerer *self, const char *bytes, Py_ssize_t size, unsigned char *out) {
    PyObject *view = PyMemoryView_FromMemory((char *)bytes, size, PyBUF_READ);
    if (view == NULL) {
        return FAILED;
    }
    PyObject *hash = PyObject_CallOneArg(self->sha256, view);
    Py_DECREF(view);
    PyObject *digest = hash ? PyObject_CallMethod(hash, "digest", NULL) : NULL;
    Py_XDECREF(hash);
    if (digest == NULL) {
        return FAILED;
    }
    int ok = PyBytes_Check(digest) && PyBytes_GET_SIZE(digest) == 32;
    if (ok) {
        memcpy(out, PyBytes_AS_STRING(digest), 32);
    } else {
        PyErr_SetString(PyExc_ValueError, "sha256 gave no 32-byte digest");
    }
    Py_DECREF(digest);
    return ok ? PLAIN : FAILED;
}

/* {"label": label, "hash": base64(sha256(bytes))} */
static PyObject *assertion(Answerer *self, PyObject *label, const char *bytes, Py_ssize_t size) {
    unsigned char digest[32];
    char text[44];
    if (sha256(self, bytes, size, digest) < 0) {
        return NULL;
    }
    base64_32(digest, text);
    PyObject *hash = PyUnicode_FromStringAndSize(text, 44);
    PyObject *item = hash ? PyDict_New() : NULL;
    if (item == NULL || PyDict_SetItem(item, K_LABEL, label) < 0 ||
        PyDict_SetItem(item, K_HASH, hash) < 0) {
        Py_XDECREF(item);
        item = NULL;
    }
    Py_XDECREF(hash);
    return item;
}

/* provenance._manifest: the request's, the data's and the ledger's assertions. */
static PyObject *manifest(Answerer *self, PyObject *request, Buf *data, PyObject *label,
                          PyObject *ledger) {
    PyObject *items = PyList_New(3);
    if (items == NULL) {
        return NULL;
    }
    PyObject *labels[3] = {self->labels[0], self->labels[1], label};
    const char *bytes[3] = {PyBytes_AS_STRING(request), data->data, PyBytes_AS_STRING(ledger)};
    Py_ssize_t sizes[3] = {PyBytes_GET_SIZE(request), data->len, PyBytes_GET_SIZE(ledger)};
    for (int i = 0; i < 3; i++) {
        PyObject *made = assertion(self, labels[i], bytes[i], sizes[i]);
        if (made == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        PyList_SET_ITEM(items, i, made);
    }
    PyObject *result = PyDict_New();
    if (result == NULL ||
        PyDict_SetItem(result, K_CLAIM, self->generator) < 0 ||
        PyDict_SetItem(result, K_ALG, K_SHA256) < 0 ||
        PyDict_SetItem(result, K_ASSERTIONS, items) < 0) {
        Py_CLEAR(result);
    }
    Py_DECREF(items);
    return result;
}

/* The subject as issue_json builds it: its type, the data's stated members, the pseudonyms
 * (if any), the manifest. */
static PyObject *subject(Answerer *self, PyObject *data, PyObject *names, PyObject *manifest) {
    PyObject *result = PyDict_New();
    if (result == NULL || PyDict_SetItem(result, K_TYPE, K_LEASE_ANSWER) < 0) {
        goto failed;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->parts); i++) {
        PyObject *name = PyTuple_GET_ITEM(self->parts, i);
        PyObject *value = PyDict_GetItemWithError(data, name);
        if (value == NULL && PyErr_Occurred()) {
            goto failed;
        }
        if (value != NULL && PyDict_SetItem(result, name, value) < 0) {
            goto failed;
        }
    }
    if (names != Py_None && PyDict_GET_SIZE(names) &&
        PyDict_SetItem(result, K_PSEUDONYMS, names) < 0) {
        goto failed;
    }
    if (PyDict_SetItem(result, K_MANIFEST, manifest) < 0) {
        goto failed;
    }
    return result;
failed:
    Py_XDECREF(result);
    return NULL;
}

/* issue_json's _plain_names: None, or a dict of exact str to exact str under ASCII names. */
static int plain_names(PyObject *names) {
    if (names == Py_None) {
        return 1;
    }
    if (!PyDict_CheckExact(names)) {
        return 0;
    }
    Py_ssize_t position = 0;
    PyObject *name, *value;
    while (PyDict_Next(names, &position, &name, &value)) {
        if (!PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(value) ||
            !PyUnicode_IS_ASCII(name)) {
            return 0;
        }
    }
    return 1;
}

/* The configuration's hash for ``stamp``, remembered for the next answer of the same
 * millisecond (Signer.sign_jcs_text hashes proof[0] + stamp + proof[1]). */
static int config_hash(Answerer *self, PyObject *stamp) {
    if (self->stamp != NULL && PyObject_RichCompareBool(self->stamp, stamp, Py_EQ) == 1) {
        return PLAIN;
    }
    Buf config = {0};
    int state = buf_put_bytes(&config, self->proof[0]);
    if (state == PLAIN && (state = buf_put_bytes(&config, stamp)) == PLAIN) {
        state = buf_put_bytes(&config, self->proof[1]);
    }
    if (state == PLAIN) {
        state = sha256(self, config.data, config.len, self->config_hash);
    }
    buf_free(&config);
    if (state == PLAIN) {
        Py_INCREF(stamp);
        Py_XSETREF(self->stamp, stamp);
    }
    return state;
}

/* 'z' + base58btc(Ed25519(configuration hash + sha256(canonical))): the proofValue. */
static int proof_value(Answerer *self, Buf *canonical, char *value, Py_ssize_t *size) {
    unsigned char message[64];
    memcpy(message, self->config_hash, 32);
    if (sha256(self, canonical->data, canonical->len, message + 32) < 0) {
        return FAILED;
    }
    Py_ssize_t size_ = sizeof message; /* "y#" reads a Py_ssize_t (PY_SSIZE_T_CLEAN) */
    PyObject *signed_ = PyObject_CallFunction(self->sign, "y#", (const char *)message, size_);
    if (signed_ == NULL) {
        return FAILED;
    }
    int ok = PyBytes_Check(signed_) && PyBytes_GET_SIZE(signed_) == 64;
    if (ok) {
        value[0] = 'z';
        *size = 1 + base58((unsigned char *)PyBytes_AS_STRING(signed_), 64, value + 1);
    } else {
        PyErr_SetString(PyExc_ValueError, "the signer gave no 64-byte signature");
    }
    Py_DECREF(signed_);
    return ok ? PLAIN : FAILED;
}

/* The credential's canonical bytes: the frame around the subject and the stamp. */
static int credential(Answerer *self, Buf *canonical, PyObject *subject, PyObject *stamp) {
    if (buf_put_bytes(canonical, self->frame[0]) < 0) {
        return FAILED;
    }
    int state = encode_json(canonical, subject, 1, NULL);
    if (state != PLAIN) {
        return state;
    }
    if (buf_put_bytes(canonical, self->frame[1]) < 0 || buf_put_bytes(canonical, stamp) < 0 ||
        buf_put_bytes(canonical, self->frame[2]) < 0) {
        return FAILED;
    }
    return PLAIN;
}

/* Everything after the data's text: the credential with its proof spliced in. */
static int provenance(Answerer *self, Buf *out, PyObject *data, PyObject *names, PyObject *request,
                      Buf *hashed, PyObject *label, PyObject *ledger, PyObject *stamp) {
    Buf canonical = {0};
    char value[96];
    Py_ssize_t size = 0;
    PyObject *stated = manifest(self, request, hashed, label, ledger);
    PyObject *whole = stated ? subject(self, data, names, stated) : NULL;
    int state = whole ? credential(self, &canonical, whole, stamp) : FAILED;
    if (state == PLAIN && (state = config_hash(self, stamp)) == PLAIN) {
        state = proof_value(self, &canonical, value, &size);
    }
    if (state == PLAIN && (buf_put(out, ",\"_provenance\":", 15) < 0 ||
                           buf_put(out, canonical.data, canonical.len - 1) < 0 ||
                           buf_put(out, ",\"proof\":", 9) < 0 ||
                           buf_put_bytes(out, self->proof[2]) < 0 ||
                           buf_put_bytes(out, stamp) < 0 || buf_put_bytes(out, self->proof[3]) < 0 ||
                           buf_put(out, value, size) < 0 || buf_put_bytes(out, self->proof[4]) < 0 ||
                           buf_put(out, "}}", 2) < 0)) {
        state = FAILED;
    }
    buf_free(&canonical);
    Py_XDECREF(stated);
    Py_XDECREF(whole);
    return state;
}

/* A grant's owner token, written after the data's last member: it is never hashed (DESIGN §5). */
static int owner_token(Buf *out, PyObject *owner) {
    out->len--; /* the data's closing brace */
    int state = buf_put(out, ",\"ownerToken\":", 14);
    if (state == PLAIN && (state = encode_json(out, owner, 0, NULL)) == PLAIN) {
        state = buf_put(out, "}", 1);
    }
    return state;
}

PyObject *answerer_envelope(Answerer *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 && nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "envelope takes six or seven arguments");
        return NULL;
    }
    PyObject *data = args[0], *names = args[1], *request = args[2], *label = args[3];
    PyObject *ledger = args[4], *stamp = args[5], *owner = nargs == 7 ? args[6] : Py_None;
    if (!PyBytes_CheckExact(request) || !PyBytes_CheckExact(ledger) ||
        !PyBytes_CheckExact(stamp) || !PyUnicode_CheckExact(label)) {
        PyErr_SetString(PyExc_TypeError, "envelope: request, ledger and stamp are bytes, label str");
        return NULL;
    }
    if (!PyDict_CheckExact(data) || !plain_names(names) ||
        (owner != Py_None && (!PyUnicode_CheckExact(owner) || PyDict_GET_SIZE(data) == 0))) {
        Py_RETURN_NONE;
    }
    Buf hashed = {0}, out = {0};
    int state = encode_json(&hashed, data, 1, self->secrets);
    if (state == PLAIN && (state = buf_put(&out, "{\"data\":", 8)) == PLAIN) {
        state = encode_json(&out, data, 0, NULL);
    }
    if (state == PLAIN && owner != Py_None) {
        state = owner_token(&out, owner);
    }
    if (state == PLAIN) {
        state = provenance(self, &out, data, names, request, &hashed, label, ledger, stamp);
    }
    PyObject *result = state == PLAIN ? PyBytes_FromStringAndSize(out.data, out.len) : NULL;
    buf_free(&hashed);
    buf_free(&out);
    if (state == NOT_PLAIN) {
        Py_RETURN_NONE;
    }
    return result;
}
