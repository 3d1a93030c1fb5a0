"""Canonical documents of the record (apiVersion ``kernelindex.dev/v1alpha1``) and their digests.

A document is ``{"kind", "spec", "metadata", "apiVersion"}``. Its digest is
``sha256:`` + hex SHA-256 of the RFC 8785 (JCS) canonical form of the document
*without* ``metadata``: names and titles are presentation, so renaming a record
never changes its identity. The published reference records follow this rule.
"""

import hashlib

import rfc8785

API_VERSION = "kernelindex.dev/v1alpha1"


def canonical_bytes(value) -> bytes:
    """RFC 8785 canonical JSON of ``value``."""
    return rfc8785.dumps(value)


def sha256_digest(value) -> str:
    """``sha256:<hex>`` of the canonical form of any JSON value."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def document_digest(document: dict) -> str:
    """The digest of a record document: its canonical form, metadata left out."""
    return sha256_digest({key: value for key, value in document.items() if key != "metadata"})


def make_document(kind: str, spec: dict, metadata: dict) -> dict:
    """A record document, keys in the order the reference pages show them."""
    return {"kind": kind, "spec": spec, "metadata": metadata, "apiVersion": API_VERSION}
