"""Regenerate the golden manifests (run by hand, then review the diff): python -m tests.data.golden.make_golden"""

import json
import tempfile
from pathlib import Path

from app.manifests import canonical_bytes, document_digest
from app.models import Run
from tests.conftest import DATA, make_app
from tests.test_manifests import FNA_ID, MTA_ID

with tempfile.TemporaryDirectory() as folder:
    app = make_app(f"sqlite:///{folder}/golden.sqlite3")
    assert app.test_cli_runner().invoke(args=["import", "liger", str(DATA / "liger_small.csv")]).exit_code == 0
    for external_id, name in ((FNA_ID, "fna_reference.json"), (MTA_ID, "mta_reference.json")):
        with app.test_request_context():
            bundle = Run.get(Run.external_id == external_id).manifest_bundle()
        golden = {"canonical": {kind: canonical_bytes(doc).decode() for kind, doc in bundle.items()},
                  "digests": {kind: document_digest(doc) for kind, doc in bundle.items()}}
        (Path(__file__).parent / name).write_text(json.dumps(golden, indent=2, ensure_ascii=False) + "\n")
