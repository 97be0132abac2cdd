"""Test-only raw packets, run inside a pod's namespace with nsenter:
  spoof.py send FAMILY SRC DST SPORT DPORT PAYLOAD   one UDP datagram from any source address
  spoof.py listen PORT MARKER TIMEOUT                 prints each UDP payload received on PORT
                                                      (IPv4 and IPv6) until MARKER came on both
                                                      families or TIMEOUT seconds passed"""
import select
import socket
import struct
import sys
import time


def checksum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def send(family, src, dst, sport, dport, payload):
    af = socket.AF_INET if family == '4' else socket.AF_INET6
    s_bin, d_bin = socket.inet_pton(af, src), socket.inet_pton(af, dst)
    length = 8 + len(payload)
    pseudo = s_bin + d_bin + (struct.pack('!BBH', 0, 17, length) if af == socket.AF_INET else struct.pack('!I3xB', length, 17))
    udp = struct.pack('!HHHH', sport, dport, length, 0) + payload
    csum = checksum(pseudo + udp) or 0xffff
    udp = udp[:6] + struct.pack('!H', csum) + udp[8:]
    if af == socket.AF_INET:
        header = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + length, 1, 0, 64, 17, 0, s_bin, d_bin)
        header = header[:10] + struct.pack('!H', checksum(header)) + header[12:]
    else:
        header = struct.pack('!IHBB16s16s', 6 << 28, length, 17, 64, s_bin, d_bin)
    sock = socket.socket(af, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sock.sendto(header + udp, (dst, 0))


def listen(port, marker, timeout):
    socks = []
    for af, addr in ((socket.AF_INET, '0.0.0.0'), (socket.AF_INET6, '::')):
        s = socket.socket(af, socket.SOCK_DGRAM)
        if af == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, port))
        socks.append(s)
    print('ready', flush=True)
    waiting = set(socks)
    end = time.monotonic() + timeout
    while waiting and time.monotonic() < end:
        ready, _, _ = select.select(socks, [], [], max(0, end - time.monotonic()))
        for s in ready:
            data, _ = s.recvfrom(2048)
            print(data.decode(errors='replace'), flush=True)
            if data.decode(errors='replace') == marker:
                waiting.discard(s)


if sys.argv[1] == 'send':
    send(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7].encode())
else:
    listen(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
