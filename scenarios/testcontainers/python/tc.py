"""What a user's Python test does with Testcontainers: start a Pulsar
container on fixed ports with its cluster named by the environment,
produce and consume with the Python client, stop the container and start
it again. Prints one "ok ..." line per check and exits non-zero at the
first that fails."""

import json
import sys
import time
import urllib.request

import pulsar
from testcontainers.core.container import DockerContainer


def check(ok, what):
    if not ok:
        print("FAILED " + what, flush=True)
        sys.exit(1)
    print("ok " + what, flush=True)


def wait_http(url, timeout=30):
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read().decode()
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def roundtrip(url, topic):
    client = pulsar.Client(url)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"hello")
        m = consumer.receive(timeout_millis=30000)
        consumer.acknowledge(m)
        return m.data()
    finally:
        client.close()


container = (
    DockerContainer("apachepulsar/pulsar:4.0.8")
    .with_env("clusterName", "standalone-0")
    .with_env("PULSAR_MEM", "-Xms512m -Xmx512m")
    .with_bind_ports(6650, 16650)
    .with_bind_ports(8080, 18080)
    .with_command('bash -c "bin/apply-config-from-env.py conf/standalone.conf && exec bin/pulsar standalone -nss -nfw"')
)
container.start()
try:
    clusters = wait_http("http://localhost:18080/admin/v2/clusters")
    check(json.loads(clusters) == ["standalone-0"], "the environment names the cluster: " + clusters)
    check(roundtrip("pulsar://localhost:16650", "tc-python") == b"hello", "a message produced is consumed")
    wrapped = container.get_wrapped_container()
    wrapped.stop(timeout=10)
    wrapped.reload()
    check(wrapped.status == "exited", "the stopped container has exited: " + wrapped.status)
    wrapped.start()
    wait_http("http://localhost:18080/admin/v2/clusters")
    check(roundtrip("pulsar://localhost:16650", "tc-python-again") == b"hello", "the container started again serves")
finally:
    container.stop()
print("done", flush=True)
