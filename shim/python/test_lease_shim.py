"""Unit tests of lease_shim against a state root laid out as lease does.

Run: `python3 -m unittest -v test_lease_shim` from shim/python (the Rust
integration suite does, and also exercises the helper against real leases).
"""

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import unittest

import lease_shim

ID = "0123456789abcdef0123456789abcdef"


def free_for_exclusive(path):
    """True if a fresh open can take LOCK_EX|LOCK_NB (nobody holds the lease)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


class StateRoot:
    """A private state root with one lease file and its record."""

    def __init__(self, state="active"):
        self.tmp = tempfile.TemporaryDirectory()
        base = os.path.realpath(self.tmp.name)
        self.root = os.path.join(base, "state")
        for d in ("", "leases", "records"):
            os.mkdir(os.path.join(self.root, d), 0o700)
        self.lease = os.path.join(self.root, "leases", ID + ".lease")
        fd = os.open(self.lease, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.chmod(self.lease, 0o600)
        st = os.stat(self.lease)
        self.identity = "{}:{}".format(st.st_dev, st.st_ino)
        self.write_record(state=state, dev=st.st_dev, ino=st.st_ino)
        self.env = {
            "LEASE_ID": ID,
            "LEASE_FILE": self.lease,
            "LEASE_IDENTITY": self.identity,
        }

    def write_record(self, state, dev, ino):
        rec = {
            "schema": 1,
            "id": ID,
            "state": state,
            "lease": {"path": self.lease, "dev": dev, "ino": ino},
        }
        with open(os.path.join(self.root, "records", ID + ".json"), "w") as f:
            json.dump(rec, f)

    def close(self):
        self.tmp.cleanup()


class LeaseShimTest(unittest.TestCase):
    def setUp(self):
        self.saved = dict(os.environ)
        for k in list(os.environ):
            if k.startswith("LEASE_"):
                del os.environ[k]
        self.s = StateRoot()
        self.addCleanup(self.s.close)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def enter(self):
        os.environ.update(self.s.env)

    def refused(self, code):
        with self.assertRaises(lease_shim.LeaseError) as cm:
            with lease_shim.joined():
                self.fail("joined a lease that must be refused")
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        self.assertTrue(free_for_exclusive(self.s.lease) or code == "retire-in-progress")

    def test_outside_a_lease_nothing_is_passed_and_join_refuses(self):
        self.assertEqual(lease_shim.pass_fds(), ())
        self.assertEqual(lease_shim.with_lease({"cwd": "/"}), {"cwd": "/"})
        self.refused(None)

    def test_joined_holds_the_lease_and_closes_it(self):
        self.enter()
        with lease_shim.joined() as fd:
            self.assertFalse(free_for_exclusive(self.s.lease), "held while in the block")
            self.assertEqual(lease_shim.pass_fds(), (fd,))
            self.assertEqual(os.environ["LEASE_FD"], str(fd))
            self.assertTrue(os.get_inheritable(fd) is False, "close-on-exec in this process")
        self.assertTrue(free_for_exclusive(self.s.lease), "free after the block")
        self.assertNotIn("LEASE_FD", os.environ)
        with self.assertRaises(OSError):
            os.fstat(fd)

    def test_inherited_descriptor_is_recognised(self):
        self.enter()
        fd = os.open(self.s.lease, os.O_RDONLY)
        self.addCleanup(os.close, fd)
        os.environ["LEASE_FD"] = str(fd)
        self.assertEqual(lease_shim.held_fd(), fd)
        other = os.open("/dev/null", os.O_RDONLY)
        self.addCleanup(os.close, other)
        os.environ["LEASE_FD"] = str(other)
        self.assertIsNone(lease_shim.held_fd(), "another file at LEASE_FD is not the lease")
        os.environ["LEASE_FD"] = "9999"
        self.assertIsNone(lease_shim.held_fd(), "a closed LEASE_FD is not held")

    def test_popen_wrapper_passes_the_descriptor(self):
        self.enter()
        probe = (
            "import os; fd = int(os.environ['LEASE_FD']); st = os.fstat(fd);"
            "print('%d:%d' % (st.st_dev, st.st_ino))"
        )
        with lease_shim.joined():
            p = lease_shim.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE)
            out, _ = p.communicate()
            self.assertEqual(p.returncode, 0)
            self.assertEqual(out.decode().strip(), self.s.identity)
            r = lease_shim.run([sys.executable, "-c", probe], capture_output=True)
            self.assertEqual(r.stdout.decode().strip(), self.s.identity)
            # Plain subprocess closes it: the child sees a closed descriptor.
            r = subprocess.run([sys.executable, "-c", probe], capture_output=True)
            self.assertNotEqual(r.returncode, 0)

    def test_child_keeps_the_lease_after_the_parent_lets_go(self):
        self.enter()
        with lease_shim.joined():
            p = lease_shim.Popen(
                [sys.executable, "-c", "import sys; sys.stdin.read()"],
                stdin=subprocess.PIPE,
            )
        self.assertFalse(free_for_exclusive(self.s.lease), "the child still holds it")
        p.communicate(b"")
        self.assertTrue(free_for_exclusive(self.s.lease))

    def test_wrong_identity(self):
        self.enter()
        dev, ino = self.s.identity.split(":")
        os.environ["LEASE_IDENTITY"] = "{}:{}".format(dev, int(ino) + 1)
        self.refused("lease-identity")
        os.environ["LEASE_IDENTITY"] = "12"
        self.refused("lease-identity")

    def test_recreated_file(self):
        self.enter()
        # Renamed away rather than unlinked: the old inode stays allocated, so
        # the new file cannot reuse its number.
        os.rename(self.s.lease, self.s.lease + ".old")
        self.refused("lease-missing")
        fd = os.open(self.s.lease, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        self.refused("lease-identity")

    def test_hardlinked_file(self):
        self.enter()
        os.link(self.s.lease, self.s.lease + ".2")
        self.refused("lease-identity")

    def test_symlink_is_not_followed(self):
        self.enter()
        real = self.s.lease + ".real"
        os.rename(self.s.lease, real)
        os.symlink(real, self.s.lease)
        self.refused("lease-identity")

    def test_loose_mode(self):
        self.enter()
        os.chmod(self.s.lease, 0o644)
        self.refused("lease-insecure")

    def test_unsafe_directory(self):
        self.enter()
        os.chmod(os.path.join(self.s.root, "leases"), 0o755)
        self.refused("lease-dir-unsafe")

    def test_held_exclusively_by_a_retire(self):
        self.enter()
        fd = os.open(self.s.lease, os.O_RDONLY | os.O_CLOEXEC)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.refused("retire-in-progress")

    def test_record_states(self):
        self.enter()
        st = os.stat(self.s.lease)
        for state, code in [("retiring", "retire-in-progress"), ("removed", "lease-missing")]:
            self.s.write_record(state, st.st_dev, st.st_ino)
            self.refused(code)
        for state in ["planned", "active", "terminal", "retained", "interrupted"]:
            self.s.write_record(state, st.st_dev, st.st_ino)
            with lease_shim.joined():
                pass
        self.s.write_record("active", st.st_dev, st.st_ino + 1)
        self.refused("lease-identity")
        os.unlink(os.path.join(self.s.root, "records", ID + ".json"))
        self.refused("not-recorded")

    def test_file_outside_a_leases_directory(self):
        self.enter()
        os.environ["LEASE_FILE"] = os.path.join(self.s.root, ID + ".lease")
        self.refused("lease-identity")

    def test_never_unlocks(self):
        with open(lease_shim.__file__) as f:
            code = f.read()
        self.assertFalse("fcntl.LOCK_" + "UN" in code, "the helper never unlocks")
        self.assertFalse("lockf(" in code, "the helper uses flock only")


if __name__ == "__main__":
    unittest.main()
