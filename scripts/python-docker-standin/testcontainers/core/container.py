"""DockerContainer for apachepulsar/pulsar images, served by pulsarsim.

A test written for testcontainers starts a Pulsar standalone in Docker: an
image, environment variables that bin/apply-config-from-env.py writes into
conf/standalone.conf, and port bindings from the container's 6650 and 8080
to the host. This stand-in starts a pulsarsim process instead, as that
container would run: the environment variables that name a standalone.conf
key become that key (PULSAR_PREFIX_key too, as apply-config-from-env.py
adds it), the host ports of the bindings become
brokerServicePort and webServicePort (there is no network namespace: the
process listens on the host ports themselves). The command is not run;
every container is `pulsar standalone`. stop() and kill() send the signals
docker stop and docker kill send.

PULSARSIM_BIN names the pulsarsim binary.
"""

import os
import signal as signals
import subprocess
import tempfile
import time

# Environment variables of the Pulsar image that are not standalone.conf
# keys: the JVM's options and the scripts' own settings.
_NOT_CONF = ("PULSAR_", "JAVA_")

_BROKER_PORT, _WEB_PORT = 6650, 8080


class _Wrapped:
    """The docker-py container object: kill() and logs()."""

    def __init__(self, container):
        self._c = container

    def kill(self, signal="SIGKILL"):
        self._c._signal(signal)

    def logs(self, **_):
        return self._c._logs()

    def stop(self, timeout=10):
        self._c.stop(timeout=timeout)

    @property
    def status(self):
        return "running" if self._c._running() else "exited"


class DockerContainer:
    """A Pulsar standalone container, run as a pulsarsim process."""

    def __init__(self, image, **kwargs):
        if "pulsar" not in image:
            raise ValueError(f"the pulsarsim stand-in runs Pulsar images only, not {image}")
        self.image = image
        self.env = {}
        self.ports = {}
        self.command = None
        self._proc = None
        self._dir = None

    def with_env(self, key, value):
        self.env[key] = value
        return self

    def with_bind_ports(self, container, host=None):
        self.ports[int(container)] = int(host if host is not None else container)
        return self

    def with_exposed_ports(self, *ports):
        for p in ports:
            self.ports.setdefault(int(p), int(p))
        return self

    def with_command(self, command):
        self.command = command
        return self

    def with_name(self, name):
        return self

    def get_container_host_ip(self):
        return "localhost"

    def get_exposed_port(self, port):
        return self.ports[int(port)]

    def get_wrapped_container(self):
        return _Wrapped(self)

    def start(self):
        self._dir = tempfile.mkdtemp(prefix="pulsarsim-container-")
        conf = {}
        for k, v in self.env.items():
            if k.startswith("PULSAR_PREFIX_"):
                # apply-config-from-env.py adds these keys, prefix dropped.
                conf[k[len("PULSAR_PREFIX_"):]] = v
            elif not k.startswith(_NOT_CONF):
                conf[k] = v
        conf["bindAddress"] = "127.0.0.1"
        conf["brokerServicePort"] = str(self.ports.get(_BROKER_PORT, _BROKER_PORT))
        conf["webServicePort"] = str(self.ports.get(_WEB_PORT, _WEB_PORT))
        path = os.path.join(self._dir, "standalone.conf")
        with open(path, "w") as f:
            for k, v in conf.items():
                f.write(f"{k}={v}\n")
        self._log = open(os.path.join(self._dir, "pulsarsim.log"), "wb")
        binary = os.environ.get("PULSARSIM_BIN", "pulsarsim")
        self._proc = subprocess.Popen([binary, "-config", path], stdout=self._log, stderr=subprocess.STDOUT)
        return self

    def stop(self, force=True, delete_volume=True, timeout=10):
        """As docker stop: SIGTERM, then SIGKILL after timeout seconds."""
        if self._proc is None:
            return
        if self._running():
            self._proc.send_signal(signals.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()

    def _signal(self, name):
        sig = getattr(signals, name) if isinstance(name, str) else name
        # As docker kill, it returns once the signal is sent.
        if self._running():
            self._proc.send_signal(sig)

    def _running(self):
        return self._proc is not None and self._proc.poll() is None

    def _logs(self):
        self._log.flush()
        with open(os.path.join(self._dir, "pulsarsim.log"), "rb") as f:
            return f.read()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
