#!/usr/bin/env python3
"""The bad-input cases of docs/bad-input.md: each one makes an input, runs a
tcheck-bpf command on it and reads the exit status and the first line of
standard error.

  bad_input_cases.py --check docs/bad-input.md   runs every case and fails when
      one differs from its row of the table (exit status or message), when a
      row has no case or a case no row, when a command dies of a signal or
      runs past its time limit, or when one exits 0 on input it must refuse;
  bad_input_cases.py --write docs/bad-input.md   runs every case and rewrites
      the table (between the bad-input-table markers) from what it saw.

Inputs are made from the checked-in fuzzing seeds (tests/fuzz/corpus/) with a
fixed seed for the "random" offsets, and every command runs in a scratch
folder with relative file names, so each message is the same on every run.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEED_TRACE = os.path.join(CORPUS, "trace_reader", "calls")
SEED_RULES = os.path.join(CORPUS, "rules_loader", "nccl-parallel")
SEED_TRAINCHECK = os.path.join(CORPUS, "traincheck_trace", "ddp-api")
SEED_CONFIG = os.path.join(CORPUS, "agent_config", "deploy")
BEGIN, END = "<!-- bad-input-table:begin -->", "<!-- bad-input-table:end -->"
TIME_LIMIT = 60
RANDOM = random.Random(20261125)

# The seed trace's layout (checked when the cases are made): the file header
# ends at byte 99, then four chunks.
TRACE_HEADER_END = 99
CHUNK_AT = [99, 439, 1159, 1799]


def seed(path):
    with open(path, "rb") as handle:
        return bytearray(handle.read())


def put_u32(data, offset, value):
    struct.pack_into("<I", data, offset, value)


def fix_header_crc(data):
    """Recomputes the file header's checksum (bytes 0-19, then the body)."""
    body_length = struct.unpack_from("<I", data, 16)[0]
    crc = zlib.crc32(bytes(data[0:20]))
    crc = zlib.crc32(bytes(data[24:24 + body_length]), crc)
    put_u32(data, 20, crc)


def fix_chunk_crcs(data, chunk):
    """Recomputes a chunk's payload and header checksums."""
    length = struct.unpack_from("<I", data, chunk + 4)[0]
    put_u32(data, chunk + 12, zlib.crc32(bytes(data[chunk + 40:chunk + 40 + length])))
    put_u32(data, chunk + 36, zlib.crc32(bytes(data[chunk:chunk + 36])))


def flip(data, offset):
    data[offset] ^= 0xFF
    return data


def between(low, high):
    """A "random" offset in [low, high], the same on every run."""
    return RANDOM.randint(low, high)


def rules_json():
    return json.loads(seed(SEED_RULES))


def rules_with(change):
    rules = rules_json()
    change(rules)
    return json.dumps(rules, indent=1).encode()


def traincheck_line(change):
    lines = seed(SEED_TRAINCHECK).decode().splitlines()
    first = json.loads(lines[0])
    change(first)
    return (json.dumps(first) + "\n" + "\n".join(lines[1:]) + "\n").encode()


def contain_rule(count):
    """An EventContain rule: every step holds 'count' all-reduces."""
    return {"relation": "EventContain", "event": {"kind": "step", "name": "step"},
            "child": {"kind": "nccl", "name": "ncclAllReduce"}, "value": count,
            "precondition": [], "passing": 3, "failing": 0, "scope": "all", "pipelines": 1}


def deployed_config():
    """The deployed agent config, its events file in the scratch folder."""
    return seed(SEED_CONFIG).replace(b"/var/log/tcheck-bpf/events.jsonl", b"events.jsonl")


def big_rules():
    """A well-formed rules file of 50 MB: the seed's rules over and over."""
    rules = rules_json()
    one = json.dumps(rules["rules"], indent=1)[1:-1]
    copies = 50 * 1024 * 1024 // len(one) + 1
    head = json.dumps({k: v for k, v in rules.items() if k != "rules"})[:-1]
    return (head + ', "rules": [' + ",".join([one] * copies) + "]}").encode()


# ---- the cases ----
# Each: id, input kind, case, the input file's name, what makes it (bytes, a
# callable giving bytes, "directory" or None for a missing file), the command
# (IN stands for the input), and whether exit status 0 is right for it (a
# damaged chunk is skipped with a warning and the rest read: exit 0).

TRACE = "trace file"
RULES = "rules file"
TRAINCHECK = "TrainCheck JSON Lines trace"
CONFIG = "agent config file"
PID = "process id"
OPTION = "command-line option"

DUMP = ["dump", "IN"]
CHECK_RULES = ["check", "--rules", "IN", "good.trace"]
INFER = ["infer", "-o", "rules-out.json", "IN"]
AGENT = ["agent", "--config", "IN", "--duration", "1", "--listen", "127.0.0.1:0"]


def trace_cut(offset):
    return lambda: seed(SEED_TRACE)[:offset]


def trace_changed(change):
    def make():
        data = seed(SEED_TRACE)
        change(data)
        return data
    return make


def string_definition_id_zero(data):
    # The first chunk's first record is the string definition of id 1.
    put_u32(data, CHUNK_AT[0] + 40 + 8, 0)
    fix_chunk_crcs(data, CHUNK_AT[0])


def string_definition_too_long(data):
    put_u32(data, CHUNK_AT[0] + 40 + 4, 0xFFFFFF00)
    fix_chunk_crcs(data, CHUNK_AT[0])


def undefined_string(data):
    # The process record after the string definition: its command's string id.
    record = CHUNK_AT[0] + 40 + 8 + 20
    body = record + 8
    for at in range(body, body + 44, 4):
        if struct.unpack_from("<I", data, at)[0] == 1:
            put_u32(data, at, 4242)
            break
    fix_chunk_crcs(data, CHUNK_AT[0])


def huge_payload(data):
    put_u32(data, CHUNK_AT[1] + 4, 0xFFFFFFFF)
    put_u32(data, CHUNK_AT[1] + 36, zlib.crc32(bytes(data[CHUNK_AT[1]:CHUNK_AT[1] + 36])))


def huge_record_count(data):
    put_u32(data, CHUNK_AT[1] + 8, 0xFFFFFFFF)
    put_u32(data, CHUNK_AT[1] + 36, zlib.crc32(bytes(data[CHUNK_AT[1]:CHUNK_AT[1] + 36])))


def huge_record_length(data):
    # The second chunk's first record claims more bytes than the chunk has.
    put_u32(data, CHUNK_AT[1] + 40 + 4, 0x7FFFFFFF)
    fix_chunk_crcs(data, CHUNK_AT[1])


def huge_header_body(data):
    put_u32(data, 16, 0xFFFFFFFF)
    put_u32(data, 20, zlib.crc32(bytes(data[0:20])))


def older_minor_unknown_kind(data):
    """Format 1.1, and the last chunk's second record of a kind no format has."""
    put_u32(data, 12, 1)
    fix_header_crc(data)
    second = CHUNK_AT[3] + 40 + 8 + struct.unpack_from("<I", data, CHUNK_AT[3] + 40 + 4)[0]
    struct.pack_into("<H", data, second, 99)
    fix_chunk_crcs(data, CHUNK_AT[3])


def newer_major(data):
    put_u32(data, 8, 2)
    fix_header_crc(data)


def cases():
    trace_payload_cuts = sorted({between(CHUNK_AT[i] + 41, CHUNK_AT[i + 1] - 1)
                                 for i in range(3)})
    rules_size = len(seed(SEED_RULES))
    rules_cuts = sorted({between(1, rules_size - 2) for _ in range(3)})
    rules_flips = sorted({between(0, rules_size - 1) for _ in range(3)})
    tc_size = len(seed(SEED_TRAINCHECK))
    tc_cuts = sorted({between(1, tc_size - 2) for _ in range(2)})
    tc_flips = sorted({between(0, tc_size - 1) for _ in range(2)})
    config = deployed_config()
    # Bytes of the setting lines, not of the comments.
    settings = [i for i in range(len(config))
                if not config[config.rfind(b"\n", 0, i) + 1:].startswith(b"#")
                and config[i:i + 1] != b"\n"]
    config_flips = sorted({settings[between(0, len(settings) - 1)] for _ in range(3)})
    config_cut = settings[between(0, len(settings) - 1)]
    out = [
        # Trace files: what `dump` (and every command that reads a trace) opens.
        ("trace-empty", TRACE, "empty", "in.trace", b"", DUMP, False),
        ("trace-not-a-trace", TRACE, "a text file", "in.trace", b"not a trace at all\n", DUMP,
         False),
        ("trace-cut-fixed-header", TRACE,
         f"truncated at byte {between(9, 23)} (inside the fixed header)", "in.trace", None, DUMP,
         False),
        ("trace-cut-header-body", TRACE,
         f"truncated at byte {between(25, TRACE_HEADER_END - 1)} (inside the header body)",
         "in.trace", None, DUMP, False),
        ("trace-cut-chunk-header", TRACE,
         f"truncated at byte {between(CHUNK_AT[1] + 1, CHUNK_AT[1] + 39)} (inside chunk 1's "
         "header)", "in.trace", None, DUMP, True),
    ]
    for number, offset in enumerate(trace_payload_cuts, 1):
        chunk = max(i for i, at in enumerate(CHUNK_AT) if at < offset)
        out.append((f"trace-cut-payload-{number}", TRACE,
                    f"truncated at byte {offset} (inside chunk {chunk}'s records)", "in.trace",
                    trace_cut(offset), DUMP, True))
    out += [
        ("trace-cut-at-chunk-end", TRACE, f"truncated at byte {CHUNK_AT[2]} (right after a "
         "chunk: what a recorder killed between two chunks leaves)", "in.trace",
         trace_cut(CHUNK_AT[2]), DUMP, True),
        ("trace-flip-signature", TRACE, "byte 0 flipped (the signature)", "in.trace",
         trace_changed(lambda d: flip(d, 0)), DUMP, False),
        ("trace-flip-version", TRACE, "byte 8 flipped (the major version)", "in.trace",
         trace_changed(lambda d: flip(d, 8)), DUMP, False),
        ("trace-newer-major", TRACE, "major version 2, checksum right", "in.trace",
         trace_changed(newer_major), DUMP, False),
        ("trace-flip-header-body", TRACE,
         f"byte {between(24, TRACE_HEADER_END - 1)} flipped (the header body: host, command "
         "line)", "in.trace", None, DUMP, False),
        ("trace-flip-chunk-header", TRACE,
         f"byte {between(CHUNK_AT[1] + 4, CHUNK_AT[1] + 35)} flipped (chunk 1's header)",
         "in.trace", None, DUMP, True),
        ("trace-flip-records", TRACE,
         f"byte {between(CHUNK_AT[2] + 40, CHUNK_AT[3] - 1)} flipped (chunk 2's records)",
         "in.trace", None, DUMP, True),
        ("trace-flip-string-table", TRACE,
         f"byte {between(CHUNK_AT[0] + 40 + 12, CHUNK_AT[0] + 40 + 27)} flipped (a string "
         "definition's text)", "in.trace", None, DUMP, True),
        ("trace-string-id-zero", TRACE, "a string definition's id set to 0, checksums right",
         "in.trace", trace_changed(string_definition_id_zero), DUMP, True),
        ("trace-string-too-long", TRACE, "a string definition's length set to 0xFFFFFF00, "
         "checksums right", "in.trace", trace_changed(string_definition_too_long), DUMP, True),
        ("trace-undefined-string", TRACE, "a record names string id 4242, never defined; "
         "checksums right", "in.trace", trace_changed(undefined_string), DUMP, True),
        ("trace-huge-payload", TRACE, "a chunk claims a payload of 0xFFFFFFFF bytes, checksum "
         "right", "in.trace", trace_changed(huge_payload), DUMP, True),
        ("trace-huge-record-count", TRACE, "a chunk claims 0xFFFFFFFF records, checksum right",
         "in.trace", trace_changed(huge_record_count), DUMP, True),
        ("trace-huge-record-length", TRACE, "a record claims 0x7FFFFFFF bytes, checksums right",
         "in.trace", trace_changed(huge_record_length), DUMP, True),
        ("trace-huge-header-body", TRACE, "the header claims a body of 0xFFFFFFFF bytes, "
         "checksum right", "in.trace", trace_changed(huge_header_body), DUMP, False),
        ("trace-directory", TRACE, "a directory", "in.trace", "directory", DUMP, False),
        ("trace-missing", TRACE, "no such file", "in.trace", None, DUMP, False),
        ("trace-check-flipped", TRACE, "chunk 2's records flipped, read by `check`", "in.trace",
         trace_changed(lambda d: flip(d, CHUNK_AT[2] + 100)), ["check", "IN"], True),
        ("trace-diff-flipped", TRACE, "a string definition flipped, read by `diff`",
         "in.trace", trace_changed(lambda d: flip(d, CHUNK_AT[0] + 40 + 16)),
         ["diff", "IN", "good.trace"], True),
        # Read with a note: a kind format 1.1 lacks is damage, not a newer writer's record.
        ("trace-older-minor-unknown-kind", TRACE, "format 1.1 with a record of an unknown "
         "kind, checksums right", "in.trace", trace_changed(older_minor_unknown_kind), DUMP,
         True),
        ("trace-infer-empty", TRACE, "empty, read by `infer`", "in.trace", b"", INFER, False),
        # `check --rules` and `infer` also read TrainCheck traces: a file of neither format
        # is said to be neither.
        ("trace-rules-text", TRACE, "a text file, read by `check --rules`", "in.trace",
         b"not a trace at all\n", ["check", "--rules", "good.rules", "IN"], False),
    ]
    # Rules files: `check --rules` (the agent's --rules reads them the same way).
    out += [
        ("rules-empty", RULES, "empty", "in.json", b"", CHECK_RULES, False),
    ]
    for number, offset in enumerate(rules_cuts, 1):
        out.append((f"rules-cut-{number}", RULES, f"truncated at byte {offset} of {rules_size}",
                    "in.json", (lambda o: lambda: seed(SEED_RULES)[:o])(offset), CHECK_RULES,
                    False))
    for number, offset in enumerate(rules_flips, 1):
        out.append((f"rules-flip-{number}", RULES, f"byte {offset} flipped", "in.json",
                    (lambda o: lambda: flip(seed(SEED_RULES), o))(offset), CHECK_RULES, False))
    out += [
        ("rules-not-object", RULES, "a JSON array, not an object", "in.json", b"[1, 2]\n",
         CHECK_RULES, False),
        ("rules-rules-string", RULES, '`"rules"` a string', "in.json",
         lambda: rules_with(lambda r: r.update(rules="all of them")), CHECK_RULES, False),
        ("rules-version-string", RULES, '`"version"` a string', "in.json",
         lambda: rules_with(lambda r: r.update(version="2")), CHECK_RULES, False),
        ("rules-newer-version", RULES, '`"version": 99`', "in.json",
         lambda: rules_with(lambda r: r.update(version=99)), CHECK_RULES, False),
        ("rules-rule-number", RULES, "a rule that is a number", "in.json",
         lambda: rules_with(lambda r: r["rules"].insert(0, 7)), CHECK_RULES, False),
        ("rules-relation-number", RULES, '`"relation"` a number', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(relation=7)), CHECK_RULES, False),
        ("rules-unknown-relation", RULES, '`"relation": "Frobnicate"`', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(relation="Frobnicate")), CHECK_RULES,
         False),
        ("rules-event-string", RULES, '`"event"` a string', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(event="ncclAllReduce")), CHECK_RULES,
         False),
        ("rules-field-array", RULES, '`"field"` an array', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(field=["count"])), CHECK_RULES, False),
        ("rules-precondition-object", RULES, '`"precondition"` an object', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(precondition={})), CHECK_RULES,
         False),
        ("rules-huge-integer", RULES, '`"passing": 10^30`', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(passing=10 ** 30)), CHECK_RULES,
         False),
        ("rules-huge-real", RULES, '`"passing": 1e400`', "in.json",
         lambda: seed(SEED_RULES).replace(b'"passing": 720', b'"passing": 1e400', 1),
         CHECK_RULES, False),
        ("rules-negative-count", RULES, '`"passing": -1`', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(passing=-1)), CHECK_RULES, False),
        ("rules-count-string", RULES, '`"failing": "abc"`', "in.json",
         lambda: rules_with(lambda r: r["rules"][0].update(failing="abc")), CHECK_RULES, False),
        ("rules-contain-count-string", RULES, 'an EventContain rule of count `"abc"`', "in.json",
         lambda: rules_with(lambda r: r["rules"].append(contain_rule("abc"))), CHECK_RULES,
         False),
        ("rules-contain-count-zero", RULES, 'an EventContain rule of count `"0"`', "in.json",
         lambda: rules_with(lambda r: r["rules"].append(contain_rule("0"))), CHECK_RULES, False),
        ("rules-no-rules", RULES, '`"rules": []`: nothing to check', "in.json",
         lambda: rules_with(lambda r: r.update(rules=[])), CHECK_RULES, False),
        # Accepted with a warning: each rule is checked once.
        ("rules-repeated", RULES, "one rule 100,000 times", "in.json",
         lambda: rules_with(lambda r: r.update(rules=r["rules"][:1] * 100000)), CHECK_RULES,
         True),
        ("rules-deep-nesting", RULES, "100,000 nested arrays", "in.json",
         b"[" * 100000 + b"]" * 100000, CHECK_RULES, False),
        ("rules-deep-nesting-in-rule", RULES, '`"precondition"` nested 100,000 deep', "in.json",
         lambda: seed(SEED_RULES).replace(b'"precondition": []',
                                          b'"precondition": ' + b"[" * 100000 + b"]" * 100000,
                                          1), CHECK_RULES, False),
        ("rules-directory", RULES, "a directory", "in.json", "directory", CHECK_RULES, False),
        ("rules-missing", RULES, "no such file", "in.json", None, CHECK_RULES, False),
        ("rules-50-mb", RULES, "50 MB of well-formed rules (the seed's, repeated)", "in.json",
         big_rules, CHECK_RULES, True),
    ]
    # TrainCheck traces: what `infer` reads besides tcheck-bpf traces.
    out += [
        ("traincheck-empty", TRAINCHECK, "empty", "trace_API_0.log", b"", INFER, False),
    ]
    for number, offset in enumerate(tc_cuts, 1):
        out.append((f"traincheck-cut-{number}", TRAINCHECK,
                    f"truncated at byte {offset} of {tc_size}", "trace_API_0.log",
                    (lambda o: lambda: seed(SEED_TRAINCHECK)[:o])(offset), INFER, False))
    for number, offset in enumerate(tc_flips, 1):
        out.append((f"traincheck-flip-{number}", TRAINCHECK, f"byte {offset} flipped",
                    "trace_API_0.log",
                    (lambda o: lambda: flip(seed(SEED_TRAINCHECK), o))(offset), INFER, False))
    out += [
        ("traincheck-not-json", TRAINCHECK, "a line that is not JSON", "trace_API_0.log",
         lambda: b"this is not JSON\n" + seed(SEED_TRAINCHECK), INFER, False),
        ("traincheck-line-array", TRAINCHECK, "a line that is a JSON array", "trace_API_0.log",
         lambda: seed(SEED_TRAINCHECK) + b"[1, 2, 3]\n", INFER, False),
        ("traincheck-pid-string", TRAINCHECK, '`"process_id"` a string', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(process_id="4101")), INFER, False),
        ("traincheck-time-string", TRAINCHECK, '`"time"` a string', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(time="noon")), INFER, False),
        ("traincheck-function-number", TRAINCHECK, '`"function"` a number', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(function=7)), INFER, False),
        ("traincheck-args-array", TRAINCHECK, '`"args"` an array', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(args=[1, 2])), INFER, False),
        ("traincheck-huge-time", TRAINCHECK, '`"time": 1e300`', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(time=1e300)), INFER, False),
        ("traincheck-huge-pid", TRAINCHECK, '`"process_id": 2^70`', "trace_API_0.log",
         lambda: traincheck_line(lambda c: c.update(process_id=2 ** 70)), INFER, False),
        ("traincheck-deep-nesting", TRAINCHECK, '`"args"` nested 100,000 deep',
         "trace_API_0.log",
         lambda: seed(SEED_TRAINCHECK).replace(b'"args": {', b'"args": {"x": ' + b"[" * 100000 +
                                               b"]" * 100000 + b", ", 1), INFER, False),
        ("traincheck-binary", TRAINCHECK, "4 KiB of random bytes", "trace_API_0.log",
         lambda: bytes(RANDOM.getrandbits(8) for _ in range(4096)), INFER, False),
        ("traincheck-empty-directory", TRAINCHECK, "an empty directory", "traces",
         "directory", INFER, False),
        ("traincheck-missing", TRAINCHECK, "no such file", "trace_API_0.log", None, INFER, False),
    ]
    # Agent config files: `key = value` lines.
    out += [
        ("config-empty", CONFIG, "empty (every setting at its default)", "in.conf", b"",
         AGENT, True),
        ("config-unknown-key", CONFIG, "an unknown setting", "in.conf", b"colour = blue\n",
         AGENT, False),
        ("config-missing-value", CONFIG, "a setting without its value", "in.conf",
         b"listen\n", AGENT, False),
        ("config-bad-number", CONFIG, "a number that is not one", "in.conf",
         b"retention = soon\n", AGENT, False),
        ("config-negative", CONFIG, "a negative number", "in.conf", b"retention = -5\n", AGENT,
         False),
        ("config-huge-number", CONFIG, "a huge number", "in.conf",
         b"ring-buffer-mb = 99999999999999999999\n", AGENT, False),
        ("config-too-big-ring", CONFIG, "a ring buffer over 2 GiB", "in.conf",
         b"ring-buffer-mb = 3000\n", AGENT, False),
        ("config-bad-flag", CONFIG, "a flag neither yes nor no", "in.conf", b"torch = maybe\n",
         AGENT, False),
        ("config-bad-ranks", CONFIG, "a rank range backwards", "in.conf", b"ranks = 7-2\n",
         AGENT, False),
        ("config-bad-listen", CONFIG, "a listen address without a port", "in.conf",
         b"listen = localhost\n", ["agent", "--config", "IN", "--duration", "1"], False),
        ("config-nul-byte", CONFIG, "a NUL byte in a line", "in.conf",
         b"select = train\0.py\n", AGENT, False),
        # A cut or flipped comment or value can still be a valid config: exit 0 is allowed,
        # the table holds what happens.
        ("config-cut", CONFIG, f"the deployed config truncated at byte {config_cut}",
         "in.conf", lambda: deployed_config()[:config_cut], AGENT, True),
    ]
    for number, offset in enumerate(config_flips, 1):
        out.append((f"config-flip-{number}", CONFIG, f"the deployed config, byte {offset} "
                    "flipped", "in.conf",
                    (lambda o: lambda: flip(deployed_config(), o))(offset), AGENT, True))
    out += [
        ("config-binary", CONFIG, "4 KiB of random bytes", "in.conf",
         lambda: bytes(RANDOM.getrandbits(8) for _ in range(4096)), AGENT, False),
        ("config-directory", CONFIG, "a directory", "in.conf", "directory", AGENT, False),
        ("config-missing", CONFIG, "no such file", "in.conf", None, AGENT, False),
        # Process ids.
        ("pid-missing", PID, "no such process", None, None,
         ["record", "-o", "x.trace", "--pid", "999999"], False),
        ("pid-not-a-number", PID, "not a number", None, None, ["attach", "--pid", "abc"], False),
        ("pid-negative", PID, "negative", None, None, ["attach", "--pid", "-5"], False),
        ("pid-huge", PID, "larger than any pid", None, None,
         ["attach", "--pid", "99999999999999999999"], False),
        ("pid-kernel-thread", PID, "a kernel thread (pid 2)", None, None,
         ["record", "-o", "x.trace", "--pid", "2", "--duration", "1"], False),
        ("pid-no-permission", PID, "not root (run as nobody)", None, None,
         ["attach", "--pid", "1"], False),
        # Options.
        ("option-huge-ring-buffer", OPTION, "a ring buffer beyond any size", None, None,
         ["record", "--ring-buffer-mb", "99999999999999999999", "-o", "x.trace", "--", "true"],
         False),
        ("option-huge-flight-ring", OPTION, "a flight-recorder ring beyond its limit", None, None,
         ["record", "--flight-calls", "100000", "-o", "x.trace", "--", "true"], False),
        ("option-negative-startup-limit", OPTION, "a negative start-up limit", None, None,
         ["check", "--hang-startup-seconds", "-3", "x.trace"], False),
        ("option-stall-limit-not-a-number", OPTION, "a stall limit that is no number", None,
         None, ["record", "--hang-stall-seconds", "soon", "-o", "x.trace", "--", "true"], False),
        ("option-nan-hang-limit", OPTION, "NaN as the least hang time", None, None,
         ["check", "--hang-min-seconds", "nan", "good.trace"], False),
        ("option-infinite-duration", OPTION, "an infinite duration", None, None,
         ["record", "--duration", "inf", "-o", "x.trace", "--", "true"], False),
        ("option-nan-ring-buffer", OPTION, "NaN as the ring buffer size", None, None,
         ["record", "--ring-buffer-mb", "nan", "-o", "x.trace", "--", "true"], False),
        ("option-fractional-flight-ring", OPTION, "a fractional count of calls", None, None,
         ["check", "--flight-calls", "2.5", "good.trace"], False),
        ("option-hex-alpha", OPTION, "a hexadecimal factor", None, None,
         ["check", "--alpha", "0x1p0", "good.trace"], False),
        ("option-nan-time-tolerance", OPTION, "NaN as the time tolerance", None, None,
         ["diff", "--time-tolerance", "nan", "good.trace", "good.trace"], False),
        ("config-nan-retention", CONFIG, "retention = nan", "in.conf", b"retention = nan\n",
         AGENT, False),
        # Traces that are no trace files, or one given twice.
        ("trace-device", TRACE, "a character device", None, None, ["dump", "/dev/null"], False),
        ("trace-given-twice", TRACE, "the same trace twice", None, None,
         ["check", "good.trace", "good.trace"], False),
        ("trace-twice-other-name", TRACE, "the same trace under two names", None, None,
         ["check", "--rules", "good.rules", "good.trace", "./good.trace"], False),
        ("trace-twice-in-diff", TRACE, "the same trace twice on one side of diff", None, None,
         ["diff", "good.trace", "good.trace", "--", "good.trace"], False),
        # Nothing to judge: read, said, exit 3 (never "0 hangs" and 0).
        ("judge-header-only-check", TRACE, "header only: no record to judge", "in.trace",
         trace_cut(TRACE_HEADER_END), ["check", "IN"], False),
        ("judge-header-only-rules", TRACE, "header only: no event to check", "in.trace",
         trace_cut(TRACE_HEADER_END), ["check", "--rules", "good.rules", "IN"], False),
        ("judge-header-only-diff", TRACE, "header only: no call to compare", "in.trace",
         trace_cut(TRACE_HEADER_END), ["diff", "good.trace", "IN"], False),
        ("judge-header-only-infer", TRACE, "header only: nothing to learn", "in.trace",
         trace_cut(TRACE_HEADER_END), INFER, False),
        ("command-not-found", OPTION, "record -- a command that does not exist", None, None,
         ["record", "-o", "x.trace", "--", "/nonexistent/cmd"], False),
        ("output-existing-trace", OPTION, "record -o onto a trace that exists, no --force",
         None, None, ["record", "-o", "good.trace", "--", "true"], False),
    ]
    return out


# Cases whose input is made from the case text (cut or flipped at the byte it names).
def make_named(case_id, text):
    offset = int(re.search(r"byte (\d+)", text).group(1))
    data = seed(SEED_TRACE)
    if "flipped" in text:
        return flip(data, offset)
    return data[:offset]


def run_case(case, tcheck, scratch):
    case_id, kind, text, name, make, command, _ = case
    folder = os.path.join(scratch, case_id)
    os.makedirs(folder)
    # The seed's first two chunks: a trace that reads without a warning.
    open(os.path.join(folder, "good.trace"), "wb").write(seed(SEED_TRACE)[:CHUNK_AT[2]])
    open(os.path.join(folder, "good.rules"), "wb").write(seed(SEED_RULES))
    if name:
        path = os.path.join(folder, name)
        if make == "directory":
            os.mkdir(path)
        elif make == "fifo":
            os.mkfifo(path)
        elif make is None and "no such file" not in text:
            open(path, "wb").write(make_named(case_id, text))
        elif make is not None:
            open(path, "wb").write(make() if callable(make) else make)
    arguments = [tcheck] + [name if a == "IN" else a for a in command]
    if case_id == "pid-no-permission":
        arguments = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + arguments
        os.chmod(folder, 0o777)
    began = time.monotonic()
    try:
        done = subprocess.run(arguments, cwd=folder, capture_output=True, timeout=TIME_LIMIT,
                              stdin=subprocess.DEVNULL)
        status = done.returncode
        stderr = done.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as timeout:
        status = "timeout"
        stderr = (timeout.stderr or b"").decode(errors="replace")
    seconds = time.monotonic() - began
    first = next((line for line in stderr.splitlines() if line.strip()), "")
    return status, normalise(first, folder), seconds


def normalise(message, folder):
    message = message.replace(folder + "/", "").replace(folder, ".")
    # The agent's port is the kernel's choice.
    return re.sub(r"\(port \d+\)", "(port N)", message)


def shown_command(command, name):
    return "tcheck-bpf " + " ".join(name if a == "IN" else a for a in command)


def cell(text):
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "(nothing)"


def table(results):
    lines = ["| id | input | case | command | exit | first line of standard error |",
             "| --- | --- | --- | --- | ---: | --- |"]
    for case, (status, message, _) in results:
        case_id, kind, text, name, _, command, _ = case
        shown = shown_command(command, name)
        if case_id == "pid-no-permission":
            shown = "setpriv --reuid=nobody ... " + shown
        lines.append(f"| {case_id} | {kind} | {text} | `{shown}` | {status} | {cell(message)} |")
    return "\n".join(lines)


def parse_table(document):
    """{id: (exit, message)} from the table between the markers."""
    if BEGIN not in document or END not in document:
        sys.exit(f"no table between {BEGIN} and {END}")
    body = document.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = {}
    for line in body.splitlines():
        if not line.startswith("| ") or line.startswith("| id ") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        message = cells[5]
        if message == "(nothing)":
            message = ""
        else:
            message = re.sub(r"^(`+) ?(.*?) ?\1$", r"\2", message)
        rows[cells[0]] = (cells[4], message.replace("\\|", "|"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="DOC")
    mode.add_argument("--write", metavar="DOC")
    parser.add_argument("--tcheck", default=os.path.join(ROOT, "tcheck-bpf"))
    parser.add_argument("--only", help="run the cases whose id starts with this")
    args = parser.parse_args()
    if args.write and args.only:
        parser.error("--write rewrites the whole table: leave out --only")

    data = seed(SEED_TRACE)
    layout = [TRACE_HEADER_END]
    while layout[-1] + 40 <= len(data):
        layout.append(layout[-1] + 40 + struct.unpack_from("<I", data, layout[-1] + 4)[0])
    if 24 + struct.unpack_from("<I", data, 16)[0] != TRACE_HEADER_END or layout[:-1] != CHUNK_AT:
        sys.exit(f"{SEED_TRACE} changed its layout: update TRACE_HEADER_END and CHUNK_AT")

    all_cases = [c for c in cases() if not args.only or c[0].startswith(args.only)]
    ids = [c[0] for c in all_cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    scratch = tempfile.mkdtemp(prefix="tcheck-bad-input.")
    os.chmod(scratch, 0o755)
    problems = []
    results = []
    try:
        for case in all_cases:
            status, message, seconds = run_case(case, args.tcheck, scratch)
            results.append((case, (status, message, seconds)))
            accepts_zero = case[6]
            if seconds > 2:
                print(f"{case[0]}: {seconds:.1f} s")
            if status == "timeout":
                problems.append(f"{case[0]}: still running after {TIME_LIMIT} s")
            elif status < 0 or status >= 128:
                problems.append(f"{case[0]}: died of a signal (exit {status}): {message}")
            elif status == 0 and not accepts_zero:
                problems.append(f"{case[0]}: exit 0 on input it must refuse: {message}")
            elif status != 0 and not message:
                problems.append(f"{case[0]}: exit {status} without a word")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    if args.write:
        document = open(args.write).read()
        head, rest = document.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        open(args.write, "w").write(head + BEGIN + "\n" + table(results) + "\n" + END + tail)
        print(f"{len(results)} cases written to {args.write}")
    else:
        rows = parse_table(open(args.check).read())
        for case, (status, message, _) in results:
            if case[0] not in rows:
                problems.append(f"{case[0]}: no row in {args.check}")
                continue
            want_status, want_message = rows[case[0]]
            if (str(status), message) != (want_status, want_message):
                problems.append(f"{case[0]}: exit {status} '{message}', the table says exit "
                                f"{want_status} '{want_message}'")
        if not args.only:
            for extra in sorted(set(rows) - set(ids)):
                problems.append(f"{extra}: a row of {args.check} that no case makes")
        print(f"{len(results)} bad-input cases run against {args.check}")
    for problem in problems:
        print("FAILED: " + problem, file=sys.stderr)
    if problems and args.check:
        print(f"(after checking a change is right: {sys.argv[0]} --write {args.check})",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
