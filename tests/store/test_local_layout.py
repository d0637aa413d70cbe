"""The directory store's side of the layout: a local …/ratings/<id> directory names its store and rating."""
from __future__ import annotations

from workbench.store.local import LocalStore, rating_in_dir


def test_a_ratings_directory_names_its_store_and_rating(tmp_path):
    store = LocalStore(tmp_path / "results")
    store.put_json(store.result_key("r1"), {"peak_rate": 1.0})
    found = rating_in_dir(tmp_path / "results" / "ratings" / "r1")
    assert found is not None
    s, rid = found
    assert rid == "r1" and s.root == store.root and s.get_json(s.result_key(rid)) == {"peak_rate": 1.0}
    assert rating_in_dir(tmp_path / "results" / "ratings" / "absent") is None      # not a directory
    assert rating_in_dir(tmp_path / "results") is None                            # not under ratings/
