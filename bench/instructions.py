#!/usr/bin/env python3
"""Instructions Redis spends per EVALSHA of a script on a trace, counted by callgrind: the same for the
same binary, script and trace whatever else the machine does, so two scripts compare exactly on a noisy
machine. Used by bench/instructions.sh.

    python3 bench/instructions.py SCRIPT.lua TRACE    TRACE: cost1 | rejected | weighted | deep
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


class Redis:
    """Just enough RESP for the traces."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.file = self.sock.makefile('rb')

    def call(self, *args):
        out = b'*%d\r\n' % len(args)
        for arg in args:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b'$%d\r\n%s\r\n' % (len(arg), arg)
        self.sock.sendall(out)
        reply = self.read()
        if isinstance(reply, Exception):
            raise reply
        return reply

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b'+':
            return rest.decode()
        if kind == b'-':
            return RuntimeError(rest.decode())
        if kind == b':':
            return int(rest)
        if kind == b'$':
            return None if int(rest) < 0 else self.file.read(int(rest) + 2)[:-2]
        return None if int(rest) < 0 else [self.read() for _ in range(int(rest))]


T0 = 1700000000000000  # a manual clock's start, in microseconds


def trace_calls(redis, sha, trace):
    """Prepares the trace's state and returns (the measured calls, how many calls they make)."""
    def decide(key, window, limit, cost, now, member):
        return redis.call('EVALSHA', sha, 1, key, window, limit, cost, now, member, 60000, '0')
    members = iter(range(10**9))
    if trace == 'cost1':  # admitted, Redis's clock, 1,000 keys
        def calls():
            for i in range(5000):
                decide('c:%d' % (i % 1000), 60000000, 1000000, 1, '', 'm%d' % next(members))
        calls()
        return calls, 5000
    if trace == 'rejected':  # refused, Redis's clock, 100 full keys of limit 10
        for key in range(100):
            for _ in range(10):
                decide('r:%d' % key, 60000000, 10, 1, '', 'm%d' % next(members))
        def calls():
            for i in range(5000):
                decide('r:%d' % (i % 100), 60000000, 10, 1, '', 'm%d' % next(members))
        return calls, 5000
    if trace == 'weighted':  # bench/weighted's steady state: 4,000 of 1,000,000 a minute every 240 ms
        def step(i):
            for key in range(20):
                decide('api:%d' % key, 60000000, 1000000, 4000, T0 + i * 240000, 'm%d' % next(members))
        for i in range(250):
            step(i)
        return (lambda: [step(i) for i in range(250, 500)]), 250 * 20
    if trace == 'deep':  # refusals of half the window's units: a descent through the sums of 10^4 entries
        for i in range(10000):
            decide('d', 60000000, 10**9, 1 + i % 3, T0 + i, 'm%d' % next(members))
        held = sum(1 + i % 3 for i in range(10000))
        def calls():
            for _ in range(2000):
                decide('d', 60000000, held, held // 2, T0 + 10000, 'x')
        return calls, 2000
    raise SystemExit('unknown trace ' + trace)


def main():
    script, trace = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        port = 20000 + os.getpid() % 30000
        out = os.path.join(work, 'callgrind.out')
        server = subprocess.Popen(
            ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--callgrind-out-file=' + out,
             os.environ.get('REDIS_SERVER', 'redis-server'), '--port', str(port), '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--hz', '1'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    redis = Redis(port)
                    redis.call('PING')
                    break
                except OSError:
                    time.sleep(0.1)
            sha = redis.call('SCRIPT', 'LOAD', open(script).read())
            calls, count = trace_calls(redis, sha, trace)
            subprocess.run(['callgrind_control', '-i', 'on', str(server.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            calls()
            subprocess.run(['callgrind_control', '-i', 'off', str(server.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run(['callgrind_control', '-d', str(server.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            server.terminate()
            server.wait()
        total = 0
        for name in os.listdir(work):
            for line in open(os.path.join(work, name), errors='replace'):
                found = re.match(r'(?:summary|totals): (\d+)', line)
                if found:
                    total = max(total, int(found.group(1)))
    print('%.0f' % (total / count))


main()
