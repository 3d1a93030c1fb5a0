"""The evidence page, evidence badges, the favicon, the footer's sign-in link and display names."""

import csv

import pytest

from app.pages.titles import FAMILY_TITLES, family_title, implementation_title

from .conftest import LIGER_DATA
from .pages_support import HTMX, reference_run, text_of


def test_evidence_page_explains_the_three_levels_and_what_moves_a_run(client):
    text = text_of(client.get("/about/evidence").get_data(as_text=True))
    for phrase in ("Source-reported", "source-reported", "KernelIndex rerun", "kernelindex-rerun",
                   "KernelIndex replicated", "kernelindex-replicated", "Only KernelIndex reruns raise a level",
                   "two different hosts' tokens", "never change its level"):
        assert phrase in text, phrase
    twin = client.get("/about/evidence.json").get_json()
    assert [level["level"] for level in twin["levels"]] == ["source-reported", "kernelindex-rerun",
                                                            "kernelindex-replicated"]
    assert all(level["summary"] and level["how_reached"] for level in twin["levels"])


def test_every_badge_links_to_its_level_with_title_text(small_app, client):
    html = client.get(f"/runs/{reference_run(small_app).id}").get_data(as_text=True)
    assert ('<a class="badge evidence-source-reported" href="/about/evidence#level-source-reported" '
            'title="Published and marked passed by the source') in html
    family = client.get("/families/fused_neighborhood_attention").get_data(as_text=True)
    assert family.count("class=\"badge evidence-") == family.count("href=\"/about/evidence#level-") > 0
    assert 'id="level-kernelindex-replicated"' in client.get("/about/evidence").get_data(as_text=True)


def test_favicon_is_served_not_a_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response.data[:4] == b"\x00\x00\x01\x00"


def test_footer_offers_sign_in_and_shows_who_is_signed_in(client):
    html = client.get("/about/evidence").get_data(as_text=True)
    assert 'href="/maintainers/sign-in?next=/about/evidence">Maintainer sign-in</a>' in html


def test_display_names_come_from_the_plugin_then_the_table():
    assert family_title("fused_neighborhood_attention", "Stored title") == "Fused neighborhood attention"
    assert family_title("rms_norm", "Rms norm") == "RMSNorm" == FAMILY_TITLES["rms_norm"]
    assert [family_title(name) for name in ("jsd", "kl_div", "dyt", "qwen2vl_mrope", "geglu")] == [
        "JSD", "KL divergence", "DyT", "Qwen2-VL M-RoPE", "GeGLU"]
    assert family_title("brand_new_kernel", "Brand new kernel") == "Brand new kernel"
    assert [implementation_title(name) for name in ("liger", "kernelindex_triton", "huggingface", "torch",
                                                    "torch_compile")] == [
        "Liger-Kernel", "KernelIndex Triton", "Hugging Face", "PyTorch", "torch.compile"]


def test_every_implementation_the_liger_data_names_has_a_display_name():
    """fused_add_rms_norm's six Liger providers showed as raw names (liger_cutile_fused_add_rms_norm) among the titled
    ones, on home, its family page and its runs."""
    if not LIGER_DATA.is_dir():
        pytest.skip("../shared/data/liger is not present")
    providers = {row["kernel_provider"] for path in LIGER_DATA.rglob("*.csv")
                 for row in csv.DictReader(path.read_text().splitlines()) if row.get("kernel_provider")}
    assert {name for name in providers if implementation_title(name) == name} == set()
    assert implementation_title("liger_cutile_rms_norm") == "Liger-Kernel (cuTile; add, then RMSNorm)"


def test_family_links_keep_the_runs_context(small_app, client):
    from app.pages.links import family_url_of_run

    with small_app.test_request_context():
        url = family_url_of_run(reference_run(small_app))
    assert url.startswith("/families/fused_neighborhood_attention?pass=forward&metric=speed&gpu=NVIDIA+H100+80GB+HBM3")
    assert "batch=2" in url and "heads=8" in url and "seq=" not in url  # the sweep stays free
    twin = client.get(url.replace("/fused_neighborhood_attention?", "/fused_neighborhood_attention.json?")).get_json()
    assert reference_run(small_app).id in {item["id"] for item in twin["items"]}
    assert url.replace("&", "&amp;") in client.get(f"/runs/{reference_run(small_app).id}").get_data(as_text=True)


@pytest.mark.parametrize("path, twin", [("/", "/index.json"), ("/plugins", "/plugins.json"),
                                        ("/about/evidence", "/about/evidence.json"),
                                        ("/search?q=attention", "/search.json?q=attention")])
def test_every_page_links_its_json_twin(small_app, client, path, twin):
    """The footer says every page has a JSON twin, but home, search, plugins and the evidence page linked none, and
    home's is not at the '/.json' a reader would try."""
    assert f'href="{twin}" type="application/json"' in client.get(path).get_data(as_text=True)
    assert client.get(twin).is_json


def test_a_swapped_search_links_the_twin_of_its_own_query(small_app, client):
    fragment = client.get("/search?q=liger", headers=HTMX).get_data(as_text=True)
    assert 'href="/search.json?q=liger" type="application/json"' in fragment
    nothing = client.get("/search?q=no+such+kernel", headers=HTMX).get_data(as_text=True)  # its twin: total 0
    assert "No runs match" in nothing and 'href="/search.json?q=no+such+kernel" type="application/json"' in nothing
