"""Check and replay processes forked from the process server (learning.check.forkserver) are
the processes a fresh interpreter would have been, share nothing with one another, and a
learner's code that stops or kills the server only costs its own run."""

from __future__ import annotations

import os
import time

import pytest
from stopwatch import Stopwatch  # a wall-clock limit scaled by the machine's pace

from learning.check import forkserver, remote

pytestmark = pytest.mark.skipif(
    not forkserver.enabled(), reason="forks only on Linux, under Triton's interpreter"
)

# A program in the worker's shape: main(program, requests, replies). It answers one request
# with what the process looks like, then does what the request asks.
PROBE = r"""
import json, os, random, sys


def _open(fd):
    try:
        os.fstat(fd)
    except OSError:  # the folder listing's own, closed since
        return False
    return True


def main(program, requests, replies):
    from learning.check import protocol
    protocol.write_frame(replies, protocol.dumps({"ready": True}), None)
    request = protocol.loads(protocol.read_frame(requests, None, 1 << 20))
    import __main__
    seen = {
        "main": sorted(k for k in vars(__main__) if not k.startswith("__")),
        "path": sys.path, "env": dict(os.environ), "cwd": os.getcwd(),
        "own_session": os.getsid(0) == os.getpid(), "parent": os.getppid(),
        "stdin": os.readlink("/proc/self/fd/0"),
        "fds": {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                if _open(int(fd))},
        "own_fds": [requests, replies],
        "course_modules": [m for m in sys.modules
                           if m == "learning" or m.startswith(("learning.", "exercises"))],
        "random": random.random(), "mark": getattr(json, "_left_by_an_earlier_run", None),
        "dont_write_bytecode": sys.dont_write_bytecode, "argv": sys.argv,
    }
    json._left_by_an_earlier_run = "yes"  # a later process must not see this
    protocol.write_frame(replies, protocol.dumps(seen), None)
    action = request.get("then")
    if action == "exit":
        sys.exit(3)
    if action == "raise":
        raise RuntimeError("raised at the top")
    if action == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "kill server":
        os.kill(os.getppid(), 9)
    if action == "stop server":
        os.kill(os.getppid(), 19)
    protocol.read_frame(requests, None, 1 << 20)
"""


class Probe(remote.Child):
    def __init__(self, fork: bool, extra_path=()):
        super().__init__(PROBE.replace("signal.SIGSEGV", "11"), "main({}, {}, {})",
                         remote.clean_environment(extra_path), "probe", fork=fork)  # fmt: skip

    def look(self, then: str | None = None) -> dict:
        self.start(60.0)  # as a check process is started: forked when it can be
        return self.request({"then": then}, 60.0)

    def ending(self) -> remote.ProcessDied:
        """How the process ended, once it has (as the checker words it)."""
        self.process.wait(timeout=30)
        return self._died()


@pytest.fixture
def fresh_servers():
    forkserver.close_all()
    yield
    forkserver.close_all()


def test_a_forked_process_is_the_process_a_fresh_interpreter_would_be(tmp_path, fresh_servers,
                                                                       monkeypatch):  # fmt: skip
    monkeypatch.setenv("LEARNING_CHECK_SEED", "12345")  # the checker's secret
    forked, fresh = Probe(True, [tmp_path]), Probe(False, [tmp_path])
    try:
        seen_forked, seen_fresh = forked.look(), fresh.look()
    finally:
        forked.close()
        fresh.close()
    for key in ("main", "env", "cwd", "own_session", "stdin", "course_modules",
                "dont_write_bytecode", "argv", "mark"):  # fmt: skip
        assert seen_forked[key] == seen_fresh[key], key
    assert "LEARNING_CHECK_SEED" not in seen_forked["env"]
    assert str(tmp_path) in seen_forked["path"]
    assert seen_forked["path"] == seen_fresh["path"]
    for seen in (seen_forked, seen_fresh):  # nothing open but the standard streams and its own
        # beyond its own, only what importing torch and Triton opened (files on a GPU's
        # machine): no pipe or socket of the checker's, or of another process's request
        others = {int(fd): target for fd, target in seen["fds"].items()
                  if int(fd) not in {0, 1, 2, *seen["own_fds"]}}  # fmt: skip
        assert not [t for t in others.values() if t.startswith(("pipe:", "socket:"))], others
    assert seen_forked["parent"] in forkserver.pids()
    assert seen_fresh["parent"] == os.getpid()
    server = seen_forked["parent"]
    with open(f"/proc/{server}/environ", "rb") as environ:
        assert b"LEARNING_CHECK_SEED" not in environ.read()


def test_forked_processes_share_no_state_and_draw_their_own_random_numbers(fresh_servers):
    seen = []
    for _ in range(2):
        probe = Probe(True)
        try:
            seen.append(probe.look())
        finally:
            probe.close()
    assert seen[0]["parent"] == seen[1]["parent"]  # one server ...
    assert seen[0]["mark"] is None and seen[1]["mark"] is None  # ... that no run changed
    assert seen[0]["random"] != seen[1]["random"]


def test_runs_that_differ_only_in_the_courses_own_settings_share_one_server(fresh_servers):
    """Each graded run sets its own program order (LEARNING_GRID_ORDER_SEED): a server per
    value would start one more torch-holding process for every run and never end it."""
    seen = []
    for order in ("1", "2"):
        probe = Probe(True)
        probe.env = {**probe.env, "LEARNING_GRID_ORDER_SEED": order}
        try:
            seen.append(probe.look())
        finally:
            probe.close()
    assert seen[0]["parent"] == seen[1]["parent"] and len(forkserver.pids()) == 1
    assert [s["env"]["LEARNING_GRID_ORDER_SEED"] for s in seen] == ["1", "2"]
    with open(f"/proc/{seen[0]['parent']}/environ", "rb") as environ:
        assert b"LEARNING_" not in environ.read()  # the server holds no run's settings


def test_no_sequence_of_environments_keeps_more_servers_than_the_limit(fresh_servers,
                                                                       monkeypatch):  # fmt: skip
    """Servers started under other settings end, least recently used first, but never one
    whose child is still running."""
    monkeypatch.setattr(forkserver, "PRELOAD", ())  # servers that start at once
    busy = Probe(True)
    busy.env = {**busy.env, "COURSE_TEST_SETTING": "busy"}
    try:
        held = busy.look()  # its child waits for the next request: running throughout
        for number in range(forkserver.MAX_SERVERS + 3):
            probe = Probe(True)
            probe.env = {**probe.env, "COURSE_TEST_SETTING": str(number)}
            try:
                probe.look()
            finally:
                probe.close()
            assert len(forkserver.pids()) <= forkserver.MAX_SERVERS + 1
        assert held["parent"] in forkserver.pids()  # a server with a running child is kept
        assert busy.running
    finally:
        busy.close()
    ended = Probe(True)  # one more setting: the busy server is idle now and ends
    ended.env = {**ended.env, "COURSE_TEST_SETTING": "last"}
    try:
        ended.look()
    finally:
        ended.close()
    assert len(forkserver.pids()) <= forkserver.MAX_SERVERS


@pytest.mark.parametrize(
    ("then", "reason"),
    [("exit", "exit status 3"), ("raise", "exit status 1"), ("segfault", "SIGSEGV")],
)
def test_a_forked_process_ends_as_a_fresh_one_would(then, reason, fresh_servers):
    probe = Probe(True)
    try:
        probe.look(then)
        died = probe.ending()
    finally:
        probe.close()
    assert reason in died.reason
    if then == "raise":
        assert "RuntimeError: raised at the top" in died.log_tail


def test_a_process_that_kills_its_server_ends_and_the_next_gets_a_new_server(fresh_servers):
    probe = Probe(True)
    try:
        first = probe.look("kill server")
        died = probe.ending()
    finally:
        probe.close()
    assert "SIGKILL" in died.reason
    again = Probe(True)
    try:
        second = again.look()
    finally:
        again.close()
    assert second["parent"] != first["parent"] and second["parent"] in forkserver.pids()


def test_a_stopped_server_is_replaced_within_the_fork_limit(fresh_servers, monkeypatch):
    monkeypatch.setattr(forkserver, "FORK_LIMIT_S", 2.0)
    probe = Probe(True)
    try:
        first = probe.look("stop server")
        for _ in range(500):  # until the signal has stopped it
            with open(f"/proc/{first['parent']}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "T":
                    break
            time.sleep(0.01)
    finally:
        probe.close()
    # the server is stopped: a fork is not answered, so the checker gives up on that server
    # and starts this process fresh
    with Stopwatch() as watch:
        fallback = Probe(True)
        try:
            second = fallback.look()
        finally:
            fallback.close()
    assert watch.elapsed < watch.limit(20), watch.said(20)
    assert second["parent"] == os.getpid()
    assert first["parent"] not in forkserver.pids()
    again = Probe(True)  # and the next is forked from a new server
    try:
        third = again.look()
    finally:
        again.close()
    assert third["parent"] in forkserver.pids() and third["parent"] != first["parent"]


def test_with_fresh_processes_asked_for_nothing_is_forked(fresh_servers, monkeypatch):
    monkeypatch.setenv(forkserver.FRESH_VARIABLE, "1")
    probe = Probe(True)
    try:
        seen = probe.look()
    finally:
        probe.close()
    assert seen["parent"] == os.getpid()
    assert not forkserver.pids()


def test_the_checker_keeps_its_server_across_exercises_and_ends_the_workers_strays():
    from learning.check.runner import check_exercise

    forkserver.close_all()
    check_exercise("stable_softmax", "reference")
    servers = forkserver.pids()
    assert len(servers) == 1
    check_exercise("stable_softmax", "reference")
    assert forkserver.pids() == servers  # not taken for a stray of the learner's and killed
    (server,) = servers
    os.kill(server, 0)  # still running
