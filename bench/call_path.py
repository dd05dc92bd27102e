"""Counts the call path bench/call_path.cpp traced: the functions and files a warm tryAcquire enters
before redisCommandArgv.

    python3 call_path.py BINARY TRACE INCLUDE_DIR

Rules, the same in every run: only swl's functions (the standard library and hiredis are not traced);
a function counts once however often it is entered; a function written on one line (an accessor, a
conversion: `T x() const { return x_; }`, or a constructor `T() = default;`) and a lambda inside a
counted function do not count. A climb
is a call from a header into one that includes it (a lower floor calling a higher one); a file's visits
are the runs of consecutive counted functions in it, in call order."""
import os, re, subprocess, sys

binary, trace, include = sys.argv[1:4]
include = os.path.realpath(include) + '/'

events = [line.split() for line in open(trace)]
addresses = sorted({event[1] for event in events if event[0] == 'enter'})
lines = subprocess.run(['addr2line', '-f', '-C', '-e', binary] + addresses,
                       capture_output=True, text=True, check=True).stdout.split('\n')
where = {address: (lines[2 * i], lines[2 * i + 1]) for i, address in enumerate(addresses)}

def source_line(location):
    path, _, line = location.partition(':')
    line = re.sub(r'\D.*', '', line)
    with open(path) as text:
        return text.read().split('\n')[int(line) - 1]

def counted(name, location):
    if 'lambda' in name or not location.startswith(include):
        return False
    text = source_line(location).split('//')[0].rstrip()  # its code, without a comment after it
    return not (('{' in text and text.endswith('}')) or text.endswith('= default;'))

includes = {}
def included_by(header):  # every header `header` includes, transitively
    if header not in includes:
        includes[header] = set()
        for line in open(include + header):
            found = re.match(r'#include <(swl/.*)>', line)
            if found:
                includes[header] |= {found.group(1)} | included_by(found.group(1))
    return includes[header]

stack, seen, order, climbs, at_hiredis = [], set(), [], [], None
for event in events:
    if event[0] == 'enter':
        name, location = where[event[1]]
        header = location[len(include):].split(':')[0] if location.startswith(include) else None
        caller = next((frame for frame in reversed(stack) if frame[1]), None)
        if header and caller and caller[1] != header and caller[1] in included_by(header):
            climbs.append(f'{caller[1]} -> {header} ({name.split("(")[0]})')
        stack.append((name, header))
        if counted(name, location) and name not in seen:
            seen.add(name)
            order.append((len(stack) - 1, name.split('(')[0], header))
    elif event[0] == 'leave':
        stack.pop()
    elif event[0] == 'redisCommandArgv':
        at_hiredis = [frame for frame in stack if frame[1]]
        break

for depth, name, header in order:
    print(f'{"  " * depth}{name}   ({header})')
files = {header for _, _, header in order}
visits = {}  # a file's visits: the runs of consecutive counted functions in it, in call order
for i, (_, _, header) in enumerate(order):
    if i == 0 or order[i - 1][2] != header:
        visits[header] = visits.get(header, 0) + 1
print(f'\nbroad: {len(order)} functions in {len(files)} files, entered before redisCommandArgv')
print('files visited more than once: ' + (', '.join(f'{h} {n}x' for h, n in visits.items() if n > 1) or 'none'))
print(f'stack: {len(at_hiredis)} functions in {len({h for _, h in at_hiredis})} files at redisCommandArgv')
print(f'climbs: {len(climbs)}')
for climb in climbs:
    print('  ' + climb)
