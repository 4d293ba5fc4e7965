"""pulsarsim's scenario driver for the Python client (PyPI pulsar-client, which wraps the C++ client).

It reads one scenario as JSON (from the file named by its first argument, or
from stdin), subscribes, produces the scenario's messages itself (unbatched,
each with a property "i"), answers every delivery as the scenario's script
says, and prints one JSON line per thing it saw or did. The format is
described in scenarios/clients/README.md.
"""

import json
import logging
import os
import sys
import threading
import time
from importlib import metadata

import _pulsar
import pulsar

START = time.monotonic()

SUB_TYPES = {
    "Exclusive": pulsar.ConsumerType.Exclusive,
    "Shared": pulsar.ConsumerType.Shared,
    "Failover": pulsar.ConsumerType.Failover,
    "Key_Shared": pulsar.ConsumerType.KeyShared,
    "KeyShared": pulsar.ConsumerType.KeyShared,
}


def emit(**fields):
    fields["t_ms"] = (time.monotonic() - START) * 1000.0
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def format_id(mid):
    return f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}:{mid.batch_index()}"


def outcome(sc, index, attempt):
    script = sc.get("script") or {}
    steps = script.get(index, script.get("*", []))
    if attempt < len(steps):
        return steps[attempt]
    return sc.get("default", "ack")


def read_scenario():
    if len(sys.argv) > 1 and sys.argv[1] != "-":
        with open(sys.argv[1], encoding="utf-8") as f:
            return json.load(f)
    return json.load(sys.stdin)


def run(sc):
    emit(event="start", client="python", library="pulsar-client",
         version=metadata.version("pulsar-client"))
    deadline = time.monotonic() + sc.get("deadline_ms", 60000) / 1000.0
    stop = sc.get("stop") or {}

    stdin_closed = threading.Event()
    # With produce_on_stdin, each line read from stdin asks for one more
    # message; otherwise stdin is only watched for its end.
    produce_asked = []
    produce_lock = threading.Lock()
    if stop.get("stdin_eof"):
        def watch_stdin():
            while True:
                data = sys.stdin.buffer.read1(256)
                if not data:
                    break
                if sc.get("produce_on_stdin"):
                    with produce_lock:
                        produce_asked.extend([True] * data.count(b"\n"))
            stdin_closed.set()
        threading.Thread(target=watch_stdin, daemon=True).start()

    # The C++ library logs through a Python logger writing to stderr, so that
    # stdout carries only the trace.
    log = logging.getLogger("pulsar-driver")
    log.addHandler(logging.StreamHandler(sys.stderr))
    log.setLevel(logging.WARNING)
    client_args = {"logger": log}
    if sc.get("tls_trust_certs_file"):
        client_args["tls_trust_certs_file_path"] = sc["tls_trust_certs_file"]
        client_args["tls_allow_insecure_connection"] = False
        client_args["tls_validate_hostname"] = bool(sc.get("tls_validate_hostname", False))
    if sc.get("auth_token"):
        client_args["authentication"] = pulsar.AuthenticationToken(sc["auth_token"])
    service = sc["service_url"]
    failover = sc.get("failover")
    if failover:
        # The C++ client's AutoClusterFailover: the primary's port probed
        # every check interval, a switch after failover_threshold failed
        # probes and back after switch_back_threshold good ones.
        service = pulsar.AutoClusterFailover(
            pulsar.ServiceInfo(service), [pulsar.ServiceInfo(failover["secondary"])],
            check_interval_ms=failover.get("check_interval_ms", 1000),
            failover_threshold=failover.get("failover_threshold", 1),
            switch_back_threshold=failover.get("switch_back_threshold", 1))
    client = pulsar.Client(service, **client_args)
    kwargs = {
        "consumer_type": SUB_TYPES[sc.get("subscription_type", "Shared")],
        "consumer_name": "python-driver",
        "initial_position": pulsar.InitialPosition.Earliest,
    }
    if sc.get("ack_timeout_ms", 0) > 0:
        kwargs["unacked_messages_timeout_ms"] = sc["ack_timeout_ms"]
    if sc.get("nack_delay_ms", 0) > 0:
        kwargs["negative_ack_redelivery_delay_ms"] = sc["nack_delay_ms"]
    dl = sc.get("dead_letter")
    if dl:
        kwargs["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(
            max_redeliver_count=dl["max_redeliver_count"], dead_letter_topic=dl["topic"])
    consumer = client.subscribe(sc["topic"], sc["subscription"], **kwargs)
    emit(event="subscribed")

    producer = client.create_producer(sc["topic"], producer_name="python-driver-producer",
                                      batching_enabled=False)
    for i in range(sc.get("messages", 0)):
        mid = producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}")
        emit(event="produced", i=i, id=format_id(mid))

    attempts = {}
    acked = set()
    deliveries = 0
    next_index = sc.get("messages", 0)
    service_url = None
    reason = None

    def sent(i):
        def callback(res, mid):
            if res == pulsar.Result.Ok:
                emit(event="produced", i=i, id=format_id(mid))
            else:
                emit(event="send_failed", i=i, message=str(res))
        return callback

    while reason is None:
        if failover and client.get_service_info().service_url != service_url:
            service_url = client.get_service_info().service_url
            emit(event="service_url", payload=service_url)
        with produce_lock:
            asked, produce_asked[:] = len(produce_asked), []
        for _ in range(asked):
            producer.send_async(f"m{next_index}".encode(), sent(next_index),
                                properties={"i": str(next_index)}, partition_key=f"k{next_index}")
            next_index += 1
        if stop.get("acked", 0) > 0 and len(acked) >= stop["acked"]:
            reason = "acked"
            break
        if stop.get("deliveries", 0) > 0 and deliveries >= stop["deliveries"]:
            reason = "deliveries"
            break
        if stdin_closed.is_set():
            reason = "stdin"
            break
        if time.monotonic() >= deadline:
            reason = "deadline"
            break
        try:
            msg = consumer.receive(timeout_millis=100)
        except _pulsar.Timeout:
            continue
        deliveries += 1
        props = msg.properties()
        index = props.get("i", "")
        attempt = attempts.get(index, 0)
        attempts[index] = attempt + 1
        action = outcome(sc, index, attempt)
        emit(event="received", i=int(index) if index.isdigit() else -1, attempt=attempt,
             id=format_id(msg.message_id()), payload=msg.data().decode("utf-8", "replace"),
             redelivery_count=msg.redelivery_count(), properties=props, action=action)
        if action == "ack":
            consumer.acknowledge(msg)
            acked.add(index)
        elif action == "nack":
            consumer.negative_acknowledge(msg)
        elif action != "none":
            raise ValueError(f"unknown outcome {action!r}")
    consumer.close()
    producer.close()
    client.close()
    emit(event="done", reason=reason, deliveries=deliveries, acked=len(acked))


def main():
    try:
        run(read_scenario())
    except Exception as e:  # the trace reports the failure; the exit code says it too
        emit(event="error", message=f"{type(e).__name__}: {e}")
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
