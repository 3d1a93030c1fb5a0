"""Canonical documents and digests, pinned against the published reference records and golden files."""

import json
from pathlib import Path

import pytest

from app.manifests import canonical_bytes, document_digest, sha256_digest
from app.models import Run

from .conftest import DATA

REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "reference"
FNA_ID = ("fused_neighborhood_attention/forward/torch/nvidia-h100-80gb-hbm3/"
          "batch2-dilation2-heads8-hidden512-kernel_size7-seq1024-fp32/2025-05-27-19-26-55")
MTA_ID = ("multi_token_attention/forward/torch/nvidia-geforce-rtx-3090/"
          "batch2-heads_in4-heads_out4-k3-seq1024-bf16/2025-04-28-04-46-11")


def reference_page_manifest():
    page = (REFERENCE / "run-page-fused-neighborhood-attention.txt").read_text()
    start = page.index('{\n  "run"')
    return json.loads(page[start:page.index("\n}\n", start) + 2])


def reference_manifest():
    text = (REFERENCE / "run-manifest-multi-token-attention.txt").read_text()
    return json.loads(text[text.index("{"):])


def bundle_for(app, external_id):
    with app.test_request_context():
        return Run.get(Run.external_id == external_id).manifest_bundle()


def test_canonical_form_is_rfc8785():
    assert canonical_bytes({"b": 1, "a": [1.0, "é"], "c": 1e21}) == b'{"a":[1,"\xc3\xa9"],"b":1,"c":1e+21}'
    assert sha256_digest({}) == "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def test_digest_leaves_metadata_out():
    document = {"kind": "X", "spec": {"a": 1}, "metadata": {"name": "one"}, "apiVersion": "v"}
    renamed = {**document, "metadata": {"name": "two"}}
    changed = {**document, "spec": {"a": 2}}
    assert document_digest(document) == document_digest(renamed) != document_digest(changed)


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is not present")
@pytest.mark.parametrize("external_id, reference", [(FNA_ID, reference_page_manifest), (MTA_ID, reference_manifest)])
def test_reference_records_are_reproduced(small_app, external_id, reference):
    expected = reference()
    ours = bundle_for(small_app, external_id)
    # The published protocol and environment documents come out identical, digests included.
    assert ours["protocol"] == expected["protocol"]
    assert ours["environment"] == expected["environment"]
    assert document_digest(ours["protocol"]) == expected["run"]["spec"]["protocolDigest"]
    assert document_digest(ours["environment"]) == expected["run"]["spec"]["environmentDigest"]
    # The run document is the published one except for the digests of the two documents the pages don't show.
    run = json.loads(json.dumps(ours["run"]))
    for kind in ("workload", "implementation"):
        assert run["spec"][f"{kind}Digest"] == document_digest(ours[kind])
        run["spec"][f"{kind}Digest"] = expected["run"]["spec"][f"{kind}Digest"]
    assert run == expected["run"]
    assert list(ours["run"]["spec"]) == list(expected["run"]["spec"])  # same key order as the pages show


@pytest.mark.parametrize("external_id, golden", [(FNA_ID, "fna_reference.json"), (MTA_ID, "mta_reference.json")])
def test_golden_manifests_byte_for_byte(small_app, external_id, golden):
    ours = bundle_for(small_app, external_id)
    expected = json.loads((DATA / "golden" / golden).read_text())
    assert {kind: canonical_bytes(doc).decode() for kind, doc in ours.items()} == expected["canonical"]
    assert {kind: document_digest(doc) for kind, doc in ours.items()} == expected["digests"]


def test_reference_workload_tensors(small_app):
    workload = bundle_for(small_app, FNA_ID)["workload"]["spec"]
    assert workload["parameters"] == {"seq": 1024, "batch": 2, "heads": 8, "hidden": 512, "dilation": 2,
                                      "kernel_size": 7}
    assert workload["dtype"] == "fp32" and workload["options"] == {"bias": True}
    tensors = {t["name"]: (t["dtype"], t["shape"]) for t in workload["tensors"]}
    assert tensors["hidden_states"] == ("fp32", [2, 1024, 512])
    for projection in ("q", "k", "v", "out"):
        assert tensors[f"{projection}_weight"] == ("fp32", [512, 512])
        assert tensors[f"{projection}_bias"] == ("fp32", [512])
    assert len(tensors) == 9 and workload["definition"] == {"comparator": "not_asserted"}
    mta = {t["name"]: t["shape"] for t in bundle_for(small_app, MTA_ID)["workload"]["spec"]["tensors"]}
    assert mta == {"scores": [2, 4, 1024, 1024], "weight": [4, 4, 3, 3], "bias": [4]}


def test_every_stored_document_validates_and_broken_ones_are_refused(small_app):
    from app.models import Manifest
    from app.schemas import document_errors

    with small_app.app_context():
        documents = [m.document for m in Manifest.select()]
    assert {d["kind"] for d in documents} == {"BenchmarkRun", "BenchmarkProtocol", "ExecutionEnvironment",
                                              "Workload", "Implementation"}
    assert all(document_errors(d) == {} for d in documents)
    run = next(d for d in documents if d["kind"] == "BenchmarkRun")
    broken = {**run, "spec": {**run["spec"], "protocolDigest": "md5:abc", "status": "great"}}
    assert set(document_errors(broken)["spec"]) == {"protocolDigest", "status"}
    assert "kind" in document_errors({**run, "kind": "Nonsense"})
    assert "apiVersion" in document_errors({**run, "apiVersion": "v0"})
