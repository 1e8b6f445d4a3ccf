"""Debian's headless Chromium driven over the Chrome DevTools Protocol (a websocket; no Playwright): open a page,
wait until a condition holds in it, read what a user sees (innerText, links) and take a screenshot.
Protocol: https://chromedevtools.github.io/devtools-protocol/ (Page.navigate, Runtime.evaluate,
Page.captureScreenshot, DOM.setFileInputFiles; PUT /json/new opens a tab)."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import quote
from urllib.request import Request, urlopen

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, profile: Path) -> None:
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "--window-size=1100,900", "about:blank"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://([^/]+)/", line)
            if m:
                self.http = f"http://{m.group(1)}"
                return
        raise RuntimeError("Chromium did not start")

    def open(self, url: str) -> Page:
        with urlopen(Request(f"{self.http}/json/new?{quote(url, safe='')}", method="PUT"), timeout=30) as r:
            return Page(json.loads(r.read())["webSocketDebuggerUrl"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class Page:
    def __init__(self, ws_url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(ws_url, max_size=64 * 2**20, legacy=True)
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        n = next(self.ids)
        self.ws.send(json.dumps({"id": n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == n:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    def eval(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def follow(self, href_expression: str) -> None:
        """Go where the expression's URL points, as a click in the same tab does. Deferred: a navigation started by
        the evaluation itself can end the page before Chromium answers ("Inspected target navigated or closed")."""
        self.eval(f"setTimeout(() => {{ location.href = {href_expression}; }}, 0), true")

    def wait_for(self, expression: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not self._settled(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}; page shows: {self.text()[:500]}")
            time.sleep(0.2)

    def _settled(self, expression: str):
        try:
            return self.eval(expression)
        except RuntimeError as exc:  # asked while the page was being replaced, or before it had a context: ask again
            if "navigated or closed" in str(exc) or "Cannot find default execution context" in str(exc):
                return None
            raise

    def choose_files(self, selector: str, paths: list[Path]) -> None:
        """What picking files in a file input's dialog does: the input holds them and fires its change event
        (DOM.setFileInputFiles)."""
        root = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.call("DOM.setFileInputFiles", nodeId=node, files=[str(p) for p in paths])

    def text(self) -> str:
        return self.eval("document.body.innerText") or ""

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path
