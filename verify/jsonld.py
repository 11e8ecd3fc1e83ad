"""Offline JSON-LD: a document loader for bundled contexts, and strict RDF canonicalization.

No context is ever fetched from the network (DESIGN §5): the loader serves the contexts bundled
in ``verify/contexts/`` plus any ``{IRI: document}`` the caller supplies, and refuses any other.

``canonicalize_rdfc`` is RDFC-1.0 (pyld's URDNA2015) to N-Quads, as eddsa-rdfc-2022 uses it
(vc-di-eddsa §3.2.3), made strict: JSON-LD expansion silently drops a term its contexts do not
define, which RDFC would leave unsigned, and pyld has no "safe mode" (jsonld.js does). So this
module refuses, naming the term, any property pyld reports dropped (``on_property_dropped``) and
any ``@id`` or ``@type`` that is not an absolute IRI or blank node after expansion (which RDF
serialization would skip).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from pyld import jsonld, nquads
from pyld.canon import URDNA2015

from verify.errors import MalformedInput, UndefinedTerm, UnknownContext
from verify.limits import check_bounds

# IRI -> file in verify/contexts/. Add a row when a context file is added.
CONTEXT_FILES: Mapping[str, str] = {
    "https://www.w3.org/ns/credentials/v2": "credentials-v2.jsonld",
    "https://www.w3.org/ns/credentials/examples/v2": "credentials-examples-v2.jsonld",
    "https://www.w3.org/ns/credentials/undefined-terms/v2": "credentials-undefined-terms-v2.jsonld",
    "https://w3id.org/tenure/v1": "tenure-v1.jsonld",
}

Loader = Callable[[str, Any], dict[str, Any]]

# pyld keeps processed contexts in a process-wide cache keyed by IRI alone when the
# loader tags them "static" (pyld/context_resolver.py). That cache is only sound if an
# IRI means one document for the life of the process, so every IRI served is pinned.
_pinned: dict[str, Any] = {}

# What pyld's to_rdf accepts as an absolute IRI (pyld.jsonld._is_absolute_iri), or a blank node.
# N-Quads IRIREF also forbids <>"{}|^`\ and controls: refuse what canonical form would escape.
_ABSOLUTE_IRI = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+\-.]*|_):[^\x00-\x20<>\"{}|^`\\]*$")

# RDFC-1.0 §4.4 asks implementations to bound their work: some datasets ("poison graphs") make
# Hash N-Degree Quads exponential. A tenure credential yields about 40 quads over 15 blank nodes
# and a handful of N-degree calls; these bounds leave ample room and refuse the rest in
# milliseconds.
MAX_QUADS = 400
MAX_BLANK_NODES = 100
MAX_N_DEGREE_CALLS = 200

# RDFC-1.0 canonical N-Quads escape \b \t \n \f \r \" \\ and write every other control
# character as \uXXXX (uppercase hex); pyld 3.3 escapes only five and writes the rest raw, which
# independent verifiers (rdf-canonize) hash differently. Its serializer looks `escape` up in its
# module at call time, so replacing it there fixes canonicalization without forking pyld.
_LITERAL_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_LITERAL_ESCAPES |= {'"': '\\"', "\\": "\\\\"}
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\]')


def _escape_literal(value: str) -> str:
    return _NEEDS_ESCAPE.sub(
        lambda m: _LITERAL_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), value
    )


nquads.escape = _escape_literal


@cache
def bundled_contexts() -> Mapping[str, Any]:
    """The bundled contexts, ``{IRI: document}``, read once from the package data."""
    folder = resources.files("verify").joinpath("contexts")
    return {
        iri: json.loads(folder.joinpath(name).read_text(encoding="utf-8"))
        for iri, name in CONTEXT_FILES.items()
    }


def document_loader(extra_contexts: Mapping[str, Any] | None = None) -> Loader:
    """A pyld document loader serving bundled and ``extra_contexts`` documents only."""
    contexts = dict(bundled_contexts())
    for iri, document in (extra_contexts or {}).items():
        if iri in contexts and contexts[iri] != document:
            raise MalformedInput(f"context {iri} is bundled; a different document is refused")
        _pin(iri, document)
        contexts[iri] = document

    def load(url: str, options: Any = None) -> dict[str, Any]:
        document = contexts.get(url)
        if document is None:
            raise UnknownContext(f"JSON-LD context {url} is not bundled and is never fetched")
        return {
            "contentType": "application/ld+json",
            "contextUrl": None,
            "documentUrl": url,
            "document": copy.deepcopy(document),  # pyld may edit what it is given
            "tag": "static",  # lets pyld cache the processed context across calls
        }

    return load


def _pin(iri: str, document: Any) -> None:
    """Bind a caller-supplied IRI to its document for the process (bundled ones are fixed)."""
    if iri not in _pinned:
        _pinned[iri] = copy.deepcopy(document)
    if _pinned[iri] != document:
        raise MalformedInput(f"context {iri} was already loaded with a different document")


def canonicalize_rdfc(
    document: Mapping[str, Any], extra_contexts: Mapping[str, Any] | None = None
) -> str:
    """RDFC-1.0 canonical N-Quads of a JSON-LD document; refuse undefined terms and types, and
    documents whose canonicalization would exceed the work bounds above (MalformedInput)."""
    check_bounds(document, "the JSON-LD document")
    options: dict[str, Any] = {
        # No base IRI: pyld would otherwise resolve relative IRIs against its
        # http://example.org/base/ placeholder, signing what other processors drop.
        "base": None,
        "documentLoader": document_loader(extra_contexts),
        "produceGeneralizedRdf": False,
    }
    try:
        # What pyld's normalize does (to_rdf, then URDNA2015), with the dataset measured between.
        dataset = _StrictProcessor().to_rdf(dict(document), options)
        _check_dataset(dataset)
        output = {"algorithm": "URDNA2015", "format": "application/n-quads"}
        result: str = _BoundedCanonicalizer().main(dataset, output)
    except jsonld.JsonLdError as e:
        raise _translate(e) from e
    return result


def _check_dataset(dataset: dict[str, list[dict[str, Any]]]) -> None:
    quads = [quad for triples in dataset.values() for quad in triples]
    if len(quads) > MAX_QUADS:
        raise MalformedInput(f"the document yields {len(quads)} RDF quads (at most {MAX_QUADS})")
    blanks = {
        term["value"]
        for quad in quads
        for term in (quad["subject"], quad["object"])
        if term.get("type") == "blank node"
    } | {name for name in dataset if name.startswith("_:")}
    if len(blanks) > MAX_BLANK_NODES:
        raise MalformedInput(
            f"the document has {len(blanks)} blank nodes (at most {MAX_BLANK_NODES})"
        )


class _BoundedCanonicalizer(URDNA2015):  # type: ignore[misc]
    """pyld's RDFC-1.0, refusing to run Hash N-Degree Quads (§4.8) more than a bounded number of
    times: the step whose cost explodes on poison graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.n_degree_calls = 0

    def hash_n_degree_quads(self, id_: Any, issuer: Any) -> Any:
        self.n_degree_calls += 1
        if self.n_degree_calls > MAX_N_DEGREE_CALLS:
            raise MalformedInput(
                f"RDF canonicalization needs more than {MAX_N_DEGREE_CALLS} Hash N-Degree Quads"
                " steps (RDFC-1.0 §4.4): refused"
            )
        return super().hash_n_degree_quads(id_, issuer)


def _translate(error: jsonld.JsonLdError) -> MalformedInput:
    """The first of our errors in pyld's chain of wrapped causes, or a MalformedInput."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, MalformedInput):
            return cause
        cause = cause.__cause__
    return MalformedInput(f"JSON-LD processing failed: {_innermost(error)}")


def _innermost(error: BaseException) -> str:
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error).splitlines()[0]


def _refuse_dropped(expanded_property: str | None) -> None:
    if expanded_property is None:  # pyld passes no name for null-mapped and @-reserved keys
        raise UndefinedTerm("a JSON-LD key is mapped to null or looks like a keyword")
    raise UndefinedTerm(f"JSON-LD term {expanded_property!r} is not defined by its contexts")


class _StrictProcessor(jsonld.JsonLdProcessor):  # type: ignore[misc]
    """pyld's processor, refusing what expansion would drop (a stand-in for safe mode)."""

    def __init__(self) -> None:
        super().__init__(on_property_dropped=_refuse_dropped)

    def expand(self, input_: Any, options: Any) -> Any:
        # to_rdf (and so normalize) expands through this method.
        expanded = super().expand(input_, options)
        _check_expanded(expanded)
        return expanded


def _check_expanded(node: Any) -> None:
    """Refuse relative IRIs in expanded JSON-LD: RDF serialization would skip them."""
    if isinstance(node, list):
        for item in node:
            _check_expanded(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            _check_entry(node, key, value)


def _check_entry(node: dict[str, Any], key: str, value: Any) -> None:
    if key == "@id":
        _require_iri(value, "@id", blank_ok=True)
    elif key == "@type":
        is_literal = "@value" in node
        for item in value if isinstance(value, list) else [value]:
            if not (is_literal and item == "@json"):
                _require_iri(item, "type", blank_ok=not is_literal)
    elif key == "@value":
        return  # a literal: nothing below it is JSON-LD
    elif not key.startswith("@"):
        _require_iri(key, "term", blank_ok=False)
        _check_expanded(value)
    else:
        _check_expanded(value)


def _require_iri(value: Any, what: str, blank_ok: bool) -> None:
    if not isinstance(value, str) or not _ABSOLUTE_IRI.match(value):
        raise UndefinedTerm(f"JSON-LD {what} {value!r} is not defined by the document's contexts")
    if value.startswith("_:") and not blank_ok:
        raise UndefinedTerm(f"JSON-LD {what} {value!r} is a blank node, which RDF cannot sign")
