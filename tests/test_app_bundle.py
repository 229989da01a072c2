"""Bundle reader: the real SABs open, and a hostile corpus is refused with specific errors."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from repo_paths import shared_testdata
from streams_k8s.app.bundle import BundleError, BundleLimits, read_bundle

ADL = (
    b'<?xml version="1.0"?><applicationSet xmlns="http://www.ibm.com/xmlns/prod/streams/application/v4200"/>'
)
INFO = (
    b'<bundleInfoModel xmlns="http://www.ibm.com/xmlns/prod/streams/spl/bundleInfoModel" '
    b'adlFile="app.adl" buildId="b123"><toolkit name="spl" version="1.4.0"/></bundleInfoModel>'
)


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    return buf.getvalue()


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def _sab(path: Path, entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def _good_entries(tar_members: list[tarfile.TarInfo | tuple[str, bytes]] | None = None) -> dict[str, bytes]:
    members = tar_members if tar_members is not None else [("app/app.adl", ADL)]
    return {"bundleInfo.xml": INFO, "tar/bundle.tar": _tar(members)}


def test_generated_bundle_reads_identity_and_adl(tmp_path: Path) -> None:
    bundle = read_bundle(_sab(tmp_path / "x.sab", _good_entries()))
    assert bundle.build_id == "b123"
    assert bundle.adl_name == "app.adl"
    assert bundle.adl == ADL
    assert [t.name for t in bundle.toolkits] == ["spl"]


def test_relative_links_inside_the_tree_are_accepted(tmp_path: Path) -> None:
    members = [("app/app.adl", ADL), _link("app/etc/adl", "../app.adl"), _link("app/bin/x", "y")]
    assert read_bundle(_sab(tmp_path / "x.sab", _good_entries(members))).adl == ADL


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"bundleInfo.xml": INFO}, "no 'tar/bundle.tar'"),
        ({"tar/bundle.tar": _tar([])}, "no 'bundleInfo.xml'"),
        (_good_entries([("app/other.adl", ADL)]), "'app.adl' named in bundleInfo.xml is missing"),
        (_good_entries([("app/app.adl", ADL), ("app/./app.adl", ADL)]), "duplicate ADL"),
        (_good_entries([("../evil", b"x"), ("app/app.adl", ADL)]), "path traversal"),
        (_good_entries([("/etc/evil", b"x"), ("app/app.adl", ADL)]), "absolute member path"),
        (_good_entries([_link("app/app.adl", "/etc/passwd")]), "points to absolute path"),
        (_good_entries([_link("app/x", "../../etc/passwd"), ("app/app.adl", ADL)]), "escapes the bundle"),
        (_good_entries([_link("app/x", "../../etc", tarfile.LNKTYPE), ("app/app.adl", ADL)]), "hardlink"),
        (_good_entries([_link("app/app.adl", "other.adl")]), "not a regular file"),
        (
            {**_good_entries(), "bundleInfo.xml": INFO.replace(b'adlFile="app.adl"', b'adlFile="../x.adl"')},
            "plain file name",
        ),
        ({**_good_entries(), "bundleInfo.xml": b"<not-xml"}, "not well-formed"),
        ({**_good_entries(), "../zipslip": b"x"}, "path traversal"),
        (
            {
                **_good_entries(),
                "bundleInfo.xml": b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
                + INFO.replace(b'buildId="b123"', b'buildId="&e;"'),
            },
            "DOCTYPE",
        ),
    ],
)
def test_hostile_bundles_are_refused(tmp_path: Path, entries: dict[str, bytes], message: str) -> None:
    before = set(os.listdir(tmp_path))
    path = _sab(tmp_path / "bad.sab", entries)
    with pytest.raises(BundleError, match=message):
        read_bundle(path)
    assert set(os.listdir(tmp_path)) == before | {"bad.sab"}, "nothing may be written beside the bundle"


def test_zip_bomb_is_refused_by_ratio(tmp_path: Path) -> None:
    entries = _good_entries([("app/app.adl", ADL), ("app/zeros", b"\0" * 5_000_000)])
    with pytest.raises(BundleError, match="compression ratio"):
        read_bundle(_sab(tmp_path / "bomb.sab", entries))


def test_tar_entry_count_is_capped(tmp_path: Path) -> None:
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [(f"app/f{i}", b"") for i in range(50)]
    path = _sab(tmp_path / "many.sab", _good_entries([*members, ("app/app.adl", ADL)]), zipfile.ZIP_STORED)
    with pytest.raises(BundleError, match="more than 20 entries"):
        read_bundle(path, BundleLimits(max_tar_entries=20))


def test_oversized_adl_is_refused(tmp_path: Path) -> None:
    path = _sab(tmp_path / "big.sab", _good_entries(), zipfile.ZIP_STORED)
    with pytest.raises(BundleError, match="larger than 10 bytes"):
        read_bundle(path, BundleLimits(max_adl_bytes=10))


def test_truncated_zip_is_refused(tmp_path: Path) -> None:
    path = _sab(tmp_path / "t.sab", _good_entries())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError, match="corrupt or truncated zip"):
        read_bundle(path)


def test_corrupt_tar_is_refused(tmp_path: Path) -> None:
    path = _sab(tmp_path / "c.sab", {"bundleInfo.xml": INFO, "tar/bundle.tar": b"garbage" * 100})
    with pytest.raises(BundleError, match="corrupt tar"):
        read_bundle(path)


def test_missing_file_is_a_bundle_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such bundle"):
        read_bundle(tmp_path / "absent.sab")


def _real_sabs() -> list[Path]:
    return sorted(shared_testdata("apps").glob("*.sab"))


def test_every_real_bundle_opens() -> None:
    for sab in _real_sabs():
        bundle = read_bundle(sab)
        assert bundle.adl.startswith(b"<?xml"), sab.name
        assert bundle.build_id, sab.name
        assert bundle.adl_name.endswith(".adl")
