// Package dockerapi serves the part of the Docker Engine API that
// Testcontainers (for Go, Java and Python) and docker-py use to run an
// Apache Pulsar container, and runs a pulsarsim broker for each container
// of a Pulsar image. Tests written against a Dockerized Pulsar standalone
// then run unchanged against pulsarsim, on a machine without Docker: point
// DOCKER_HOST at the server (and turn Testcontainers' reaper off, or let
// the server stand in for it).
//
// What a container is here:
//   - an image named apachepulsar/pulsar (any tag, any registry prefix) or
//     one named in Server.Images; pulling it succeeds at once, pulling
//     anything else is refused with Docker's "pull access denied";
//   - each exposed port gets a host port (the one the port bindings ask
//     for, else a free one): container port 6650 is the broker's binary
//     protocol and 8080 its admin API, served on those host ports;
//   - the container's environment sets the broker: every variable named
//     after a standalone.conf key (or PULSAR_PREFIX_ and the key), as the
//     image's apply-config-from-env.py writes them, goes to the broker's
//     standalone.conf;
//   - start runs the broker (Runtime.Start), stop sends it SIGTERM and after
//     the timeout SIGKILL, kill sends SIGKILL; a stopped container starts
//     again on the same ports; remove stops and forgets it;
//   - logs are the broker's output, with the line Testcontainers' Pulsar
//     modules wait for once the broker answers;
//   - exec runs nothing inside the container (there is no inside): a
//     command that only checks that a port listens (Testcontainers'
//     internal port check) succeeds when the broker listens, any other
//     exits 126 with a line saying so on stderr.
//
// Everything else the API has (builds, volumes, swarm...) answers 501 with
// a message naming the route, so a tool that needs it fails clearly.
package dockerapi
