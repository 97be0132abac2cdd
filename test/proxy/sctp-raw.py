#!/usr/bin/env python3
"""SCTP packets without an SCTP stack, for the proxy's SCTP test (this kernel may have no SCTP
sockets, but raw IP sockets of protocol 132 work).

  sctp-raw.py send DST DPORT SPORT   sends one SCTP INIT (verification tag 0, CRC32c checksum)
  sctp-raw.py recv v4|v6 TIMEOUT_S   prints "SRC SPORT DPORT" of the first SCTP packet received,
                                     or "timeout"
"""
import socket
import struct
import sys

IPPROTO_SCTP = 132


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def init_packet(sport: int, dport: int) -> bytes:
    # INIT chunk: type 1, flags 0, length 20; initiate tag, a_rwnd, out/in streams, initial TSN.
    chunk = struct.pack('!BBHIIHHI', 1, 0, 20, 0x1A2B3C4D, 65535, 1, 1, 1)
    header = struct.pack('!HHII', sport, dport, 0, 0)
    crc = crc32c(header + chunk)
    # The checksum field is stored little-endian (RFC 4960 appendix B).
    return header[:8] + struct.pack('<I', crc) + chunk


def send(dst: str, dport: int, sport: int) -> None:
    family = socket.AF_INET6 if ':' in dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_RAW, IPPROTO_SCTP)
    s.sendto(init_packet(sport, dport), (dst, 0))


def recv(fam: str, timeout: float) -> None:
    family = socket.AF_INET6 if fam == 'v6' else socket.AF_INET
    s = socket.socket(family, socket.SOCK_RAW, IPPROTO_SCTP)
    s.settimeout(timeout)
    print('ready', flush=True)
    try:
        data, addr = s.recvfrom(65535)
    except socket.timeout:
        print('timeout', flush=True)
        return
    # An IPv4 raw socket hands over the IP header too; an IPv6 one only the payload.
    if family == socket.AF_INET:
        data = data[(data[0] & 0x0F) * 4:]
    sport, dport = struct.unpack('!HH', data[:4])
    print(f'{addr[0]} {sport} {dport}', flush=True)


if __name__ == '__main__':
    if sys.argv[1] == 'send':
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        recv(sys.argv[2], float(sys.argv[3]))
