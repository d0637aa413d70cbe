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


def test_a_stored_object_is_on_disk_before_and_after_its_name(tmp_path, monkeypatch):
    """Issue 53: the data is fsynced before it is renamed (or linked) into place, and the directory
    after, so a crash right after a trial is stored leaves that trial, not an empty file."""
    import os
    import stat
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    store = LocalStore(tmp_path)
    store.put_bytes("ratings/r1/trials/00000.json", b"{}")
    assert synced == ["file", "dir"]
    synced.clear()
    assert store.create_bytes("ratings/r1/trials/00001.json", b"{}") and synced == ["file", "dir"]
    synced.clear()
    assert not store.create_bytes("ratings/r1/trials/00001.json", b"{}") and synced == ["file"]
