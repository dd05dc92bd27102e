#!/usr/bin/env python3
"""Where one request's time goes at one request in flight (C=1), for swl and its peers, on one server.

Run by bench/one_in_flight.sh, which builds swl_bench, installs the peers (../shared/bench) and starts the
server. Each round runs every contender once, in an order that turns, on the same workload as
bench/peers.sh (10,000 keys, a limit of 100 per second), and reads for each:

  decisions/s and the p50, as the contender prints them;
  client CPU per decision: the contender's process, user and system (getrusage of the child), less what
    the same command costs for one request (its start, its connection, its warm-up);
  Redis CPU per decision: INFO commandstats (the commands' own time) and /proc/<pid>/stat (the whole
    server: its event loop, its reads and writes);
  the rest: what a decision takes beyond the two CPUs, spent waiting (the loopback round trip, waking up).

Then, in one pass under strace -f -c (which slows it), the system calls per decision. The PING row is the
round trip alone: redis-benchmark, one client, one PING at a time.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

TICKS = os.sysconf("SC_CLK_TCK")


def redis_cli(port, *words):
    return subprocess.run(["redis-cli", "-p", str(port), *words], check=True, capture_output=True, text=True).stdout


def commandstats_usec(port):
    """The commands' own time: a script's or module command's time holds the commands it ran, which
    commandstats counts again under their own names, so where one ran only those are summed."""
    every, top = 0, 0
    for line in redis_cli(port, "INFO", "commandstats").splitlines():
        if not line.startswith("cmdstat_") or line.startswith(("cmdstat_info:", "cmdstat_config|")):
            continue
        name, stats = line[len("cmdstat_"):].split(":", 1)
        usec = int(dict(part.split("=") for part in stats.split(","))["usec"])
        every += usec
        if name.startswith(("eval", "fcall", "swl.")):
            top += usec
    return top or every


def redis_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Run:
    """What one run of a contender measured."""

    def __init__(self, contender, requests, port, pid):
        redis_cli(port, "CONFIG", "RESETSTAT")
        server_before, client_before = redis_cpu_seconds(pid), children_cpu_seconds()
        out = subprocess.run(contender.command(requests), check=True, capture_output=True, text=True).stdout
        self.client_seconds = children_cpu_seconds() - client_before
        self.server_seconds = redis_cpu_seconds(pid) - server_before
        self.commands_seconds = commandstats_usec(port) / 1e6
        self.result = contender.read(out)


class Contender:
    def __init__(self, name, command, read=None):
        self.name, self._command = name, command
        self.read = read or (lambda out: json.loads(out.strip().splitlines()[-1]))

    def command(self, requests):
        return [word.replace("{requests}", str(requests)) for word in self._command]


def read_redis_benchmark(out):
    rate = float(out.replace("\r", "\n").split("requests per second")[0].split()[-1])
    return {"decisions_per_sec": rate, "p50_us": 0}


def contenders(args):
    workload = ["--port", str(args.port), "--keys", "10000", "--limit", "100", "--window-ms", "1000",
                "--requests", "{requests}"]
    found = [
        Contender("swl sync (the script)", [args.bench, *workload, "--mode", "sync", "--native-module", "never"]),
        Contender("bare hiredis, the same EVALSHA (`--mode raw`)", [args.bench, *workload, "--mode", "raw"]),
    ]
    if args.native:
        found.append(Contender("swl sync (swl-native)", [args.bench, *workload, "--mode", "sync",
                                                          "--native-module", "required"]))
    if args.peers:
        peers = os.path.join(args.peers, "peers.js")
        for peer, name in (("rlf", "rate-limiter-flexible (fixed window)"), ("tj", "tj/ratelimiter (ZSET log)"),
                           ("ioredis-lua", "ioredis running swl's script")):
            found.append(Contender(name, ["node", peers, "--peer", peer, "--script", args.script, *workload,
                                          "--concurrency", "1"]))
    found.append(Contender("PING (the round trip alone)",
                           ["redis-benchmark", "-p", str(args.port), "-c", "1", "-P", "1", "-n", "{requests}", "-q",
                            "-t", "ping_mbulk"], read_redis_benchmark))
    return found


def syscalls_per_decision(contender, requests):
    trace = f"/tmp/one_in_flight.{os.getpid()}.strace"
    subprocess.run(["strace", "-f", "-c", "-o", trace, *contender.command(requests)], check=True,
                   capture_output=True)
    counts = {}
    with open(trace) as lines:
        for line in lines:
            words = line.split()
            if len(words) >= 5 and words[0][0].isdigit() and words[-1] != "total":
                counts[words[-1]] = int(words[3])
    os.unlink(trace)
    total = sum(counts.values()) / requests
    top = sorted(counts.items(), key=lambda item: -item[1])[:3]
    return total, ", ".join(f"{name} {count / requests:.2f}" for name, count in top)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis-pid", type=int, required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--peers", default="")
    parser.add_argument("--native", action="store_true")
    parser.add_argument("--requests", type=int, default=40000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    everyone = contenders(args)
    # What a command costs for one request: its start, connection and warm-up, taken off each run.
    floor = {contender.name: Run(contender, 1, args.port, args.redis_pid) for contender in everyone}
    runs = {contender.name: [] for contender in everyone}
    for round_number in range(args.rounds):
        turn = round_number % len(everyone)
        for contender in everyone[turn:] + everyone[:turn]:
            runs[contender.name].append(Run(contender, args.requests, args.port, args.redis_pid))
            print(f"round {round_number + 1}: {contender.name}: {runs[contender.name][-1].result}", file=sys.stderr)

    print(f"| contender | decisions/s | us per decision | p50 us | client CPU us | Redis CPU us (commandstats) "
          f"| Redis CPU us (/proc) | the rest us | system calls per decision |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|---|")
    per = 1e6 / args.requests
    for contender in everyone:
        rows, one = runs[contender.name], floor[contender.name]
        rate = statistics.median(run.result["decisions_per_sec"] for run in rows)
        p50 = statistics.median(run.result.get("p50_us", 0) for run in rows)
        client = statistics.median((run.client_seconds - one.client_seconds) * per for run in rows)
        commands = statistics.median(run.commands_seconds * per for run in rows)
        server = statistics.median((run.server_seconds - one.server_seconds) * per for run in rows)
        whole = 1e6 / rate
        calls, top = syscalls_per_decision(contender, max(1000, args.requests // 4))
        print(f"| {contender.name} | {rate:.0f} | {whole:.1f} | {p50:.1f} | {client:.1f} | {commands:.1f} | "
              f"{server:.1f} | {whole - client - server:.1f} | {calls:.2f} ({top}) |")


if __name__ == "__main__":
    main()
