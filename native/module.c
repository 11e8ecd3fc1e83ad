/* ledger._native: the Answerer type and encode_sorted (see answer.c), entry_bytes and the
 * Frontier type (see record.c). Optional: where it was not built, ledger/lease/provenance.py
 * writes every answer and ledger/lease/recorder.py every entry in Python, the same bytes. */
#include "native.h"

static PyObject *answerer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *frame, *proof, *sha256, *sign, *secrets, *parts, *labels, *generator;
    static char *keywords[] = {"frame", "proof", "sha256", "sign", "secrets",
                               "parts", "labels", "generator", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OOO!O!O!U:Answerer", keywords,
                                     &PyTuple_Type, &frame, &PyTuple_Type, &proof, &sha256, &sign,
                                     &PyFrozenSet_Type, &secrets, &PyTuple_Type, &parts,
                                     &PyTuple_Type, &labels, &generator)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(frame) != 3 || PyTuple_GET_SIZE(proof) != 5 ||
        PyTuple_GET_SIZE(labels) != 2) {
        PyErr_SetString(PyExc_ValueError, "Answerer: frame has 3 parts, proof 5, labels 2");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 8; i++) {
        PyObject *part = PyTuple_GET_ITEM(i < 3 ? frame : proof, i < 3 ? i : i - 3);
        if (!PyBytes_CheckExact(part)) {
            PyErr_SetString(PyExc_TypeError, "Answerer: frame and proof parts are bytes");
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(parts, i))) {
            PyErr_SetString(PyExc_TypeError, "Answerer: parts are str");
            return NULL;
        }
    }
    Answerer *self = (Answerer *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        self->frame[i] = Py_NewRef(PyTuple_GET_ITEM(frame, i));
    }
    for (int i = 0; i < 5; i++) {
        self->proof[i] = Py_NewRef(PyTuple_GET_ITEM(proof, i));
    }
    for (int i = 0; i < 2; i++) {
        self->labels[i] = Py_NewRef(PyTuple_GET_ITEM(labels, i));
    }
    self->sha256 = Py_NewRef(sha256);
    self->sign = Py_NewRef(sign);
    self->secrets = Py_NewRef(secrets);
    self->parts = Py_NewRef(parts);
    self->generator = Py_NewRef(generator);
    self->stamp = NULL;
    return (PyObject *)self;
}

static void answerer_dealloc(Answerer *self) {
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(self->frame[i]);
    }
    for (int i = 0; i < 5; i++) {
        Py_XDECREF(self->proof[i]);
    }
    for (int i = 0; i < 2; i++) {
        Py_XDECREF(self->labels[i]);
    }
    Py_XDECREF(self->sha256);
    Py_XDECREF(self->sign);
    Py_XDECREF(self->secrets);
    Py_XDECREF(self->parts);
    Py_XDECREF(self->generator);
    Py_XDECREF(self->stamp);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(envelope_doc,
             "envelope(data, pseudonyms, request, ledger_label, ledger_bytes, stamp, "
             "owner_token=None)\n--\n\n"
             "The answer's JSON bytes, {\"data\": ..., \"_provenance\": ...}, or None where the "
             "Python path must write them (a value that is not plain JSON). A grant's "
             "owner_token is written last in data and is not hashed.");

static PyMethodDef answerer_methods[] = {
    {"envelope", (PyCFunction)(void (*)(void))answerer_envelope, METH_FASTCALL, envelope_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject AnswererType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ledger._native.Answerer",
    .tp_basicsize = sizeof(Answerer),
    .tp_dealloc = (destructor)answerer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writes plain answers' envelopes for one signing key (see ledger/_native.pyi).",
    .tp_methods = answerer_methods,
    .tp_new = answerer_new,
};

static PyObject *encode_sorted(PyObject *module, PyObject *value) {
    Buf buf = {0};
    int state = encode_json(&buf, value, 1, NULL);
    PyObject *result = state == PLAIN ? PyBytes_FromStringAndSize(buf.data, buf.len) : NULL;
    buf_free(&buf);
    if (state == NOT_PLAIN) {
        Py_RETURN_NONE;
    }
    return result;
}

static PyMethodDef module_methods[] = {
    {"encode_sorted", encode_sorted, METH_O,
     "encode_sorted(value)\n--\n\nThe RFC 8785 bytes of a plain JSON value, or None."},
    {"entry_bytes", (PyCFunction)(void (*)(void))entry_bytes, METH_FASTCALL,
     "entry_bytes(index, kind, capacity, token, lease_id, time, expires, lifecycle, tenant, "
     "resource, holder, owner_digest, scope, trigger, result)\n--\n\n"
     "A plain ledger entry's RFC 8785 bytes, or None where the Python path must write them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ledger._native",
    .m_doc = "tenure's answers in native code: the same bytes as the Python path.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (answer_names() < 0 || PyType_Ready(&AnswererType) < 0 ||
        PyType_Ready(&FrontierType) < 0) {
        return NULL;
    }
    PyObject *made = PyModule_Create(&module);
    if (made == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(made, "Answerer", (PyObject *)&AnswererType) < 0) {
        Py_DECREF(made);
        return NULL;
    }
    if (record_sha256() && PyModule_AddObjectRef(made, "Frontier", (PyObject *)&FrontierType) < 0) {
        Py_DECREF(made);
        return NULL;
    }
    return made;
}
