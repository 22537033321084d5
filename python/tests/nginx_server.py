"""nginx in the foreground for the Python tests that serve files over HTTP
(vision/test_remote_storage.py, arrow_contract/test_parquet_remote.py)."""

import os
import shutil
import socket
import subprocess
import time


def _nginx_binary():
    for path in ("/usr/sbin/nginx", "/usr/bin/nginx"):
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("nginx")
    assert found, "nginx is missing: scripts/install_deps.sh installs nginx-light"
    return found


class Nginx:
    """nginx in the foreground, serving `root` on a free loopback port. Its
    scratch folder holds access.log (nginx's combined format) and ranges.log
    (METHOD URI STATUS "RANGE" BYTES_SENT a request: ranged_gets reads it)."""

    def __init__(self, root, scratch):
        self.root, self.scratch, self.process = root, scratch, None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]

    def url(self, path=""):
        return f"http://127.0.0.1:{self.port}/{path}"

    def start(self):
        os.makedirs(os.path.join(self.scratch, "temp"), exist_ok=True)
        conf = os.path.join(self.scratch, "nginx.conf")
        temp = os.path.join(self.scratch, "temp")
        with open(conf, "w") as f:
            if os.geteuid() == 0:
                f.write("user root;\n")  # the worker must read the 0700 scratch folders
            f.write(f"""daemon off;
worker_processes 1;
pid {self.scratch}/nginx.pid;
error_log {self.scratch}/error.log info;
events {{ worker_connections 256; }}
http {{
  default_type application/octet-stream;
  access_log {self.scratch}/access.log;
  log_format ranged '$request_method $uri $status "$http_range" $body_bytes_sent';
  access_log {self.scratch}/ranges.log ranged;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  server {{ listen 127.0.0.1:{self.port}; root {self.root}; }}
}}
""")
        self.process = subprocess.Popen(
            [_nginx_binary(), "-p", self.scratch + "/", "-c", conf,
             "-e", os.path.join(self.scratch, "error.log")])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.process.poll() is None, open(os.path.join(self.scratch, "error.log")).read()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        raise AssertionError("nginx did not start")

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def ranged_gets(self):
        """(uri, status, range header or "", body bytes sent) of every GET
        served so far, in order."""
        gets = []
        with open(os.path.join(self.scratch, "ranges.log")) as f:
            for line in f:
                method, uri, status, rest = line.split(" ", 3)
                header, sent = rest.rsplit(" ", 1)
                if method == "GET":
                    gets.append((uri, int(status), "" if header == '"-"' else header.strip('"'),
                                 int(sent)))
        return gets
