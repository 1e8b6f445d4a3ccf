"""`citerag chat` at a terminal, driven through a pseudo-terminal as a person types: a question edited with the
arrow keys before it is sent, Up recalling the previous question (in the same session and in the next one), Tab
completing `/op` to `/open`, Ctrl-C clearing a line. The system opener is a script named by $BROWSER (webbrowser's
own override) that writes down what it was asked to open."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conftest import SAMPLES

LEFT, UP, TAB, ENTER, BACKSPACE, CTRL_C, CTRL_D = "\x1b[D", "\x1b[A", "\t", "\r", "\x7f", "\x03", "\x04"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]|\r")
PROMPT = r"(^|\n)>"  # prompt_toolkit moves the cursor past the prompt's space: no space reaches the screen
WAIT_S = 240  # only against a hung process: a busy machine loads the model slowly


class Terminal:
    """A chat process on a pseudo-terminal: keys in, what the screen was sent out (escape codes taken out)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-c", "from citerag.cli import main; main()", "chat"],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.raw = ""
        self.seen = 0  # what expect() has already matched

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, pattern: str) -> str:
        """Read until `pattern` appears after what was matched before; the text up to it."""
        rx = re.compile(pattern)
        deadline = WAIT_S
        while True:
            screen = ANSI.sub("", self.raw)
            m = rx.search(screen, self.seen)
            if m:
                part, self.seen = screen[self.seen:m.end()], m.end()
                return part
            # poll, not select: late in a long test run the terminal's descriptor may be past select()'s 1024
            poller = select.poll()
            poller.register(self.master, select.POLLIN)
            ready = poller.poll(1000)
            deadline -= 0 if ready else 1
            assert deadline > 0 and self.proc.poll() is None, f"no {pattern!r} in:\n{screen[self.seen:][-3000:]}"
            if ready:
                try:
                    self.raw += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:  # the process closed the terminal
                    assert self.proc.poll() is None, f"exited; no {pattern!r} in:\n{screen[self.seen:][-3000:]}"

    def close(self) -> int:
        """The exit code; a process still running after a minute (a test failed before /quit) is killed: -9."""
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            os.close(self.master)


@pytest.fixture
def env(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    return {**os.environ, "TERM": "xterm", "BROWSER": str(browser), "PROMPT_TOOLKIT_NO_CPR": "1",
            "COLUMNS": "200", "LINES": "50"}


def test_a_person_edits_recalls_and_completes_at_the_terminal(env, tmp_path):
    data = Path(env["CITERAG_DATA_DIR"])
    t = Terminal(env)
    try:
        t.expect(r"/quit \(or Ctrl-D\) leaves")
        t.expect(PROMPT)
        # Typed with a mistake (E1), then corrected: six Left keys put the cursor after "1", Backspace, "2".
        t.type("What does error E1 mean?" + LEFT * 6 + BACKSPACE + "2" + ENTER)
        assert "Error E2 means the air quality sensor is dirty. [1]" in t.expect(r"Sources")
        t.expect(PROMPT)
        assert "fan motor" not in ANSI.sub("", t.raw)  # the E1 question was never sent
        # A half-typed line is dropped by Ctrl-C, as in a shell.
        t.type("something I changed my mind about")
        t.expect("changed my mind about")
        t.type(CTRL_C)
        t.expect(PROMPT)
        # Up recalls the question just asked; sent again, it is answered again.
        t.type(UP)
        t.expect(r"What does error E2 mean\?")
        t.type(ENTER)
        assert "Error E2 means the air quality sensor is dirty. [1]" in t.expect(r"Sources")
        t.expect(PROMPT)
        # Tab completes /op to /open; /open 1 opens the cited page.
        t.type("/op")
        t.expect("/op")
        t.type(TAB)
        t.expect(r"/open")
        t.type(" 1" + ENTER)
        t.expect(r"opening ")
        t.expect(PROMPT)
        t.type(CTRL_D)
        assert t.close() == 0
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
    manual = (SAMPLES / "kumo-pure-300-manual-en.pdf").resolve().as_uri()
    assert (tmp_path / "opened.txt").read_text().split() == [f"{manual}#page=5"]
    history = data / "chat-history"
    assert history.stat().st_mode & 0o077 == 0  # questions can be private: the owner's only
    assert "+What does error E2 mean?" in history.read_text() and "changed my mind" not in history.read_text()

    # The next session remembers: Up brings back the last line of the one before, Up again the question.
    t = Terminal(env)
    try:
        t.expect(r"leaves")
        t.expect(PROMPT)
        t.type(UP)
        t.expect(r"/open 1")
        t.type(UP)
        t.expect(r"What does error E2 mean\?")
        t.type(ENTER)
        t.expect(r"Sources")
        t.expect(PROMPT)
        t.type("/quit" + ENTER)
        assert t.close() == 0
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
