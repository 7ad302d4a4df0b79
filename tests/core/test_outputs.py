"""The output rule (spatialact.outputs): a regular or absent file is replaced atomically, ``-`` is standard output,
a character device is written through, a link is followed (the link stays), and a FIFO, a socket, a folder where a
file is wanted (or the reverse), a path under a file, a read-only file, a link loop are refused in one line naming
the option. Every case is checked on the nodes afterwards (still a FIFO, still a link, still a device, the same
bytes), never by timing."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from spatialact.outputs import (OutputError, OutputFile, check_output, make_folder, open_output, output_path,
                                write_bytes, write_text)

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


@pytest.fixture
def nodes(tmp_path):
    """A folder with one of each node: a regular file, a FIFO, a read-only file, a folder, links to the file, to a
    missing file and to a folder, a link loop, and (as root) a character device like /dev/null."""
    (tmp_path / "file.txt").write_text("old\n")
    os.mkfifo(tmp_path / "fifo")
    ro = tmp_path / "ro.txt"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to("file.txt")
    (tmp_path / "dangling").symlink_to("made/by/link.txt")
    (tmp_path / "dirlink").symlink_to("dir")
    (tmp_path / "loop").symlink_to("loop")
    if ROOT:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    yield tmp_path
    ro.chmod(0o644)


# ----- check_output: the rule, before any work ------------------------------------------------------------------
@pytest.mark.parametrize("name, kind, message", [
    ("fifo", "file", "--out {p}: is a named pipe (FIFO), not a regular file"),
    ("ro.txt", "file", "--out {p}: is read-only"),
    ("dir", "file", "--out {p}: is a folder; name a file"),
    ("dirlink", "file", "--out {p}: is a folder (a link to"),
    ("file.txt", "folder", "--out {p}: is a file; name a folder"),
    ("fifo", "folder", "--out {p}: is a named pipe (FIFO); name a folder"),
    ("file.txt/x.jsonl", "file", "--out {p}: {d}/file.txt is a file, not a folder"),
    ("file.txt/a/b", "folder", "--out {p}: {d}/file.txt is a file, not a folder"),
    ("loop", "file", "--out {p}: is a symbolic link that cannot be followed"),
])
def test_refused_in_one_line_naming_the_option(nodes, name, kind, message):
    p = nodes / name
    before = _listing(nodes)
    with pytest.raises(OutputError) as e:
        check_output(p, "--out", kind)
    text = str(e.value)
    assert text.startswith(message.format(p=p, d=nodes)) and "\n" not in text
    assert _listing(nodes) == before  # nothing made
    assert stat.S_ISFIFO(os.lstat(nodes / "fifo").st_mode)


def test_read_only_file_refused_even_for_root(nodes):
    """Root may write a file marked read-only; the rule respects the mark (the container case of the report)."""
    with pytest.raises(OutputError, match="read-only"):
        write_text(nodes / "ro.txt", "new\n", "--out")
    assert (nodes / "ro.txt").read_text() == "keep\n"
    assert stat.S_IMODE(os.stat(nodes / "ro.txt").st_mode) == 0o444


def test_read_only_folder_refused_as_an_output_folder(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        with pytest.raises(OutputError, match=r"^--out .*: folder is read-only"):
            check_output(d, "--out", "folder")
    finally:
        d.chmod(0o755)


def test_socket_refused():
    with tempfile.TemporaryDirectory(dir="/tmp") as d:  # a short path: AF_UNIX names are at most ~100 bytes
        path = os.path.join(d, "s")
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(path)
            with pytest.raises(OutputError, match="is a socket"):
                write_text(path, "x", "--out")
            assert stat.S_ISSOCK(os.lstat(path).st_mode)
        finally:
            s.close()


def test_accepted_paths(nodes):
    for name, kind in (("file.txt", "file"), ("new/deeper/x.jsonl", "file"), ("link", "file"), ("dangling", "file"),
                       ("dir", "folder"), ("dirlink", "folder"), ("new/folder", "folder")):
        assert check_output(nodes / name, "--out", kind) == nodes / name
    assert not (nodes / "new").exists()  # checking makes nothing
    assert check_output("-", "--out", "file", stdout=True) == Path("-")
    with pytest.raises(OutputError, match=r"^--out -: standard output cannot be used here"):
        check_output("-", "--out", "file")
    with pytest.raises(OutputError, match=r"^--out -: standard output cannot be used here \(a folder"):
        check_output("-", "--out", "folder", stdout=True)


# ----- writing --------------------------------------------------------------------------------------------------
def test_regular_file_replaced_atomically_keeping_its_mode(nodes):
    p = nodes / "file.txt"
    p.chmod(0o640)
    ino = os.stat(p).st_ino
    write_text(p, "new\n", "--out")
    assert p.read_text() == "new\n"
    assert os.stat(p).st_ino != ino  # a new file renamed over the old one, not the old one rewritten
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert _listing(nodes) == sorted(["file.txt", "fifo", "ro.txt", "dir", "link", "dangling", "dirlink", "loop"]
                                     + (["null"] if ROOT else []))


def test_absent_file_made_with_its_folders(tmp_path):
    p = tmp_path / "a" / "b" / "x.bin"
    write_bytes(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01" and _listing(p.parent) == ["x.bin"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask  # as open() would make it


def test_link_followed_and_kept(nodes):
    write_text(nodes / "link", "through the link\n", "--out")
    assert (nodes / "link").is_symlink() and os.readlink(nodes / "link") == "file.txt"
    assert (nodes / "file.txt").read_text() == "through the link\n"
    write_text(nodes / "dangling", "made\n", "--out")
    assert (nodes / "dangling").is_symlink()
    assert (nodes / "made" / "by" / "link.txt").read_text() == "made\n"


def test_the_temporary_lies_beside_the_link_target(tmp_path):
    """The rename happens in the target's folder (a rename across folders, or file systems, is not atomic)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "t.txt").write_text("old")
    (tmp_path / "a" / "l.txt").symlink_to(tmp_path / "b" / "t.txt")
    out = OutputFile(tmp_path / "a" / "l.txt", "--out")
    f = out.open()
    f.write("new")
    assert _listing(tmp_path / "a") == ["l.txt"] and len(_listing(tmp_path / "b")) == 2
    out.commit()
    assert _listing(tmp_path / "b") == ["t.txt"] and (tmp_path / "b" / "t.txt").read_text() == "new"
    assert (tmp_path / "a" / "l.txt").is_symlink()


@pytest.mark.skipif(not ROOT, reason="making a device node needs root")
def test_character_device_written_through(nodes):
    dev = nodes / "null"
    write_text(dev, "scores\n" * 100, "--out")
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.lstat(dev).st_rdev == os.makedev(1, 3)
    with output_path(dev, "--out") as tmp:
        tmp.write_bytes(b"by name")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    (nodes / "devlink").symlink_to("null")
    write_text(nodes / "devlink", "x", "--out")
    assert (nodes / "devlink").is_symlink() and stat.S_ISCHR(os.lstat(dev).st_mode)


def test_dev_null_written_through():
    """The system's /dev/null itself (safe either way: a process that may not replace it cannot break it)."""
    write_text("/dev/null", "x" * 1000, "--out")
    with output_path("/dev/null", "--out") as tmp:
        tmp.write_bytes(b"y")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_fifo_never_opened(nodes):
    """A FIFO is refused before it is opened (opening it for writing would wait for a reader)."""
    for write in (lambda p: write_text(p, "x", "--out"), lambda p: OutputFile(p, "--out").open(),
                  lambda p: output_path(p, "--out").__enter__()):
        with pytest.raises(OutputError, match="named pipe"):
            write(nodes / "fifo")
    assert stat.S_ISFIFO(os.lstat(nodes / "fifo").st_mode)


def test_stdout(capfd):
    write_text("-", "to stdout\n", "--out", stdout=True)
    with open_output("-", "--out", stdout=True, binary=True) as f:
        f.write(b"bytes\n")
    with output_path("-", "--out", stdout=True) as tmp:
        tmp.write_text("by name\n")
    assert capfd.readouterr().out == "to stdout\nbytes\nby name\n"


def test_an_error_leaves_the_old_file_and_no_temporary(nodes):
    p = nodes / "file.txt"
    before = _listing(nodes)
    with pytest.raises(RuntimeError):
        with open_output(p, "--out") as f:
            f.write("half")
            raise RuntimeError("writer failed")
    assert p.read_text() == "old\n" and _listing(nodes) == before
    with pytest.raises(RuntimeError):
        with output_path(p, "--out") as tmp:
            tmp.write_text("half")
            raise RuntimeError("writer failed")
    assert p.read_text() == "old\n" and _listing(nodes) == before


def test_a_node_put_in_place_meanwhile_is_not_replaced(tmp_path):
    p = tmp_path / "x.txt"
    out = OutputFile(p, "--out")
    out.open().write("x")
    os.mkfifo(p)  # another process made a FIFO there after the check
    with pytest.raises(OutputError, match="no longer a regular file"):
        out.commit()
    assert stat.S_ISFIFO(os.lstat(p).st_mode) and _listing(tmp_path) == ["x.txt"]


def test_output_path_keeps_the_suffix_and_replaces_by_the_rule(nodes):
    (nodes / "img.png").write_bytes(b"old")
    (nodes / "imglink.png").symlink_to("img.png")
    with output_path(nodes / "imglink.png", "--out") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == nodes and not tmp.exists()
        tmp.write_bytes(b"new")
    assert (nodes / "img.png").read_bytes() == b"new" and (nodes / "imglink.png").is_symlink()
    with output_path(nodes / "unwritten.png", "--out"):
        pass  # the writer made nothing: nothing is made
    assert not (nodes / "unwritten.png").exists()


def test_make_folder(nodes):
    assert make_folder(nodes / "dirlink", "--out") == nodes / "dirlink"
    assert (nodes / "dirlink").is_symlink()
    make_folder(nodes / "n1" / "n2", "--out")
    assert (nodes / "n1" / "n2").is_dir()
    with pytest.raises(OutputError, match="is a file; name a folder"):
        make_folder(nodes / "file.txt", "--out")


def test_a_dangling_link_above_the_path_is_followed(tmp_path):
    """A dangling link as a folder above the output: the file (or folder) is made where the link points, the link
    stays; without following it, os.makedirs would refuse the link as existing."""
    (tmp_path / "up").symlink_to(tmp_path / "real" / "up")
    write_text(tmp_path / "up" / "deep" / "a.txt", "one\n", "--out")
    assert (tmp_path / "real" / "up" / "deep" / "a.txt").read_text() == "one\n" and (tmp_path / "up").is_symlink()
    (tmp_path / "dirs").symlink_to(tmp_path / "real" / "dirs")
    make_folder(tmp_path / "dirs" / "run", "--out")
    assert (tmp_path / "real" / "dirs" / "run").is_dir()


def test_a_file_with_images_beside_it_refuses_a_device_and_stdout(tmp_path):
    from spatialact.outputs import check_output_beside

    assert check_output_beside(tmp_path / "q.jsonl", tmp_path / "q_images") == tmp_path / "q.jsonl"
    with pytest.raises(OutputError, match="standard output cannot be used here"):
        check_output_beside("-", tmp_path / "q_images")
    (tmp_path / "q_images").write_text("a file\n")
    with pytest.raises(OutputError, match=r"--out .*q.jsonl: image folder .*q_images: is a file; name a folder"):
        check_output_beside(tmp_path / "q.jsonl", tmp_path / "q_images")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with pytest.raises(OutputError, match=r"is a character device; .*\(null_images/\)"):
            check_output_beside(tmp_path / "null", tmp_path / "null_images")
        assert not (tmp_path / "null_images").exists()
