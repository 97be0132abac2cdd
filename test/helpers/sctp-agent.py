#!/usr/bin/env python3
"""SCTP probes and an SCTP "server" without an SCTP stack (this kernel may have no sctp module, but
raw IP sockets of protocol 132 work), for the pod agent (pod-agent.ts runs it as its child).

  sctp-agent.py --name NAME [--serve PORT,PORT]

Serving: an INIT to a served port is answered with an INIT ACK carrying the initiate tag the INIT
asked for (so conntrack takes it as the reply of that association) and NAME in its state cookie.
Probing: one JSON request a line on stdin, {"id", "probes": [{"key", "host", "port", "sport",
"timeoutMs"}]}; every INIT goes out at once, and the answer line {"id", "outcomes": {key:
{"reply": NAME} | {"error": "timeout"}}} follows when each has its INIT ACK or timed out. Stdin
closing ends the agent.
"""
import importlib.util
import json
import os
import select
import socket
import struct
import sys
import time

_spec = importlib.util.spec_from_file_location(
    'sctp_raw', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'proxy', 'sctp-raw.py'))
sctp_raw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sctp_raw)

IPPROTO_SCTP = 132
CHUNK_INIT, CHUNK_INIT_ACK = 1, 2
INITIATE_TAG = 0x1A2B3C4D
STATE_COOKIE = 7


def with_checksum(header: bytes, chunk: bytes) -> bytes:
    crc = sctp_raw.crc32c(header + chunk)
    # The checksum field is stored little-endian (RFC 4960 appendix B).
    return header[:8] + struct.pack('<I', crc) + chunk


def init_ack(sport: int, dport: int, vtag: int, name: bytes) -> bytes:
    pad = (4 - len(name) % 4) % 4
    cookie = struct.pack('!HH', STATE_COOKIE, 4 + len(name)) + name + b'\0' * pad
    chunk = struct.pack('!BBHIIHHI', CHUNK_INIT_ACK, 0, 20 + len(cookie), 0x5E5E5E5E, 65535, 1, 1, 1) + cookie
    return with_checksum(struct.pack('!HHII', sport, dport, vtag, 0), chunk)


def sctp_payload(data: bytes, family: int) -> bytes:
    # An IPv4 raw socket hands over the IP header too; an IPv6 one only the payload.
    return data[(data[0] & 0x0F) * 4:] if family == socket.AF_INET else data


def main() -> None:
    args = sys.argv[1:]
    name = args[args.index('--name') + 1].encode()
    served = {int(p) for p in args[args.index('--serve') + 1].split(',')} if '--serve' in args else set()
    socks = {socket.AF_INET: socket.socket(socket.AF_INET, socket.SOCK_RAW, IPPROTO_SCTP),
             socket.AF_INET6: socket.socket(socket.AF_INET6, socket.SOCK_RAW, IPPROTO_SCTP)}
    # (host, port, sport) -> (request id, key, deadline)
    pending = {}
    answers = {}  # request id -> (outcomes, keys still open)
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, 'raw') else sys.stdin.buffer
    buffered = b''
    print(json.dumps({'ready': name.decode()}), flush=True)

    def finish(key_of, outcome):
        req_id, key, _ = pending.pop(key_of)
        outcomes, open_keys = answers[req_id]
        outcomes[key] = outcome
        open_keys.discard(key)
        if not open_keys:
            del answers[req_id]
            print(json.dumps({'id': req_id, 'outcomes': outcomes}), flush=True)

    while True:
        now = time.monotonic()
        for k in [k for k, v in pending.items() if v[2] <= now]:
            finish(k, {'error': 'timeout'})
        wait = min((v[2] for v in pending.values()), default=now + 1) - now
        readable, _, _ = select.select([stdin, *socks.values()], [], [], max(wait, 0))
        for r in readable:
            if r is stdin:
                chunk = os.read(stdin.fileno(), 65536)
                if not chunk:
                    return
                buffered += chunk
                while b'\n' in buffered:
                    line, buffered = buffered.split(b'\n', 1)
                    request = json.loads(line)
                    answers[request['id']] = ({}, {p['key'] for p in request['probes']})
                    if not request['probes']:
                        del answers[request['id']]
                        print(json.dumps({'id': request['id'], 'outcomes': {}}), flush=True)
                    for p in request['probes']:
                        pending[(socket.inet_pton(socket.AF_INET6 if ':' in p['host'] else socket.AF_INET, p['host']), p['port'], p['sport'])] = \
                            (request['id'], p['key'], time.monotonic() + p['timeoutMs'] / 1000)
                        family = socket.AF_INET6 if ':' in p['host'] else socket.AF_INET
                        try:
                            socks[family].sendto(sctp_raw.init_packet(p['sport'], p['port']), (p['host'], 0))
                        except OSError as err:
                            finish((socket.inet_pton(family, p['host']), p['port'], p['sport']), {'error': err.strerror or str(err)})
                continue
            family = socket.AF_INET6 if r is socks[socket.AF_INET6] else socket.AF_INET
            data, addr = r.recvfrom(65535)
            payload = sctp_payload(data, family)
            if len(payload) < 16:
                continue
            sport, dport, vtag = struct.unpack('!HHI', payload[:8])
            chunk_type = payload[12]
            if chunk_type == CHUNK_INIT and dport in served:
                initiate_tag = struct.unpack('!I', payload[16:20])[0]
                r.sendto(init_ack(dport, sport, initiate_tag, name), (addr[0], 0))
            elif chunk_type == CHUNK_INIT_ACK and vtag == INITIATE_TAG:
                key_of = (socket.inet_pton(family, addr[0]), sport, dport)
                if key_of in pending:
                    cookie_len = struct.unpack('!H', payload[34:36])[0] - 4
                    finish(key_of, {'reply': payload[36:36 + cookie_len].decode()})


if __name__ == '__main__':
    main()
