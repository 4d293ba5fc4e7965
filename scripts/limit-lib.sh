# Shared by scripts/limit-produce and scripts/limit-consume (sourced, not run).

# build_limit_tools DIR: the sink, the limit client and pulsarsim, from this
# repository (pulsarsim: the binary LIMIT_PULSARSIM names, when set);
# pulsar-client-go's perf tool, from the module cache.
build_limit_tools() {
  local dir=$1
  CGO_ENABLED=0 go build -o "$dir/sink" ./internal/limit/sink
  CGO_ENABLED=0 go build -o "$dir/client" ./internal/limit/client
  if [ -n "${LIMIT_PULSARSIM:-}" ]; then
    cp "$LIMIT_PULSARSIM" "$dir/pulsarsim" # a build of another commit, for a before/after
  else
    CGO_ENABLED=0 go build -o "$dir/pulsarsim" ./cmd/pulsarsim
  fi
  if [ ! -x "$dir/perf" ]; then
    local mod
    mod=$(go mod download -json github.com/apache/pulsar-client-go@v0.19.0 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    (cd "$mod" && CGO_ENABLED=0 go build -o "$dir/perf" ./perf)
  fi
}

# pulsarsim_source: which pulsarsim runs.
pulsarsim_source() {
  if [ -n "${LIMIT_PULSARSIM:-}" ]; then
    echo "from $LIMIT_PULSARSIM"
  else
    echo "at $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' with local changes')"
  fi
}

# machine_line: what the figures ran on.
machine_line() {
  echo "$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# start_target LOG CMD...: starts a broker (the sink or pulsarsim) and waits
# until it serves; sets target_pid and target_url (read from its log).
start_target() {
  local log=$1; shift
  "$@" > "$log" 2>&1 &
  target_pid=$!
  target_url=""
  for _ in $(seq 1 100); do
    target_url=$(grep -o 'pulsar://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)
    [ -n "$target_url" ] && return 0
    kill -0 "$target_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "target did not start: $*" >&2
  cat "$log" >&2
  exit 1
}

# stop_target: ends the target started last.
stop_target() {
  kill "$target_pid" 2>/dev/null || true
  wait "$target_pid" 2>/dev/null || true
}

# cpu_ticks PID: a process's user + system time, in clock ticks.
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# ratios TSV: pulsarsim over the sink for each batch mode and count, from
# a table whose columns start: target batch count msgs_per_s cpu_us_per_msg.
ratios() {
  awk 'NR > 1 { k = $2 " " $3; rate[$1, k] = $4; cpu[$1, k] = $5; keys[k] = 1 }
    END { for (k in keys) if (rate["sink", k] > 0 && cpu["sink", k] > 0)
      printf "# batch %s: pulsarsim/sink rate %.2f; CPU per message %.2fx the sink'"'"'s%s\n", k,
        rate["pulsarsim", k] / rate["sink", k], cpu["pulsarsim", k] / cpu["sink", k],
        (cpu["sink-keep", k] > 0) ? sprintf(", %.2fx sink-keep'"'"'s", cpu["pulsarsim", k] / cpu["sink-keep", k]) : "" }' "$1"
}
