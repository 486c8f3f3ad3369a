/*
 * The TCP/IP packets of a capture through the ROHC library's TCP profile (RFC 6846): header sizes, round trips and
 * headers/s, to set beside `sigkit rohc` on the same packets.
 *
 * sigkit's code. It is built against the ROHC library (github.com/didier-barvaux/rohc, LGPL-2.1) and libpcap on the
 * bench machine only, by scripts/bench-vs-rohc.sh; nothing of the library is in this repository.
 *
 * Usage: rohc_capture [--feedback on|off] [--bench SECONDS] CAPTURE
 *   CAPTURE            pcap or pcapng (read with libpcap); link types Ethernet (802.1Q/802.1ad tags), Linux cooked
 *                      v1 and v2, raw IP (DLT_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6) and BSD loopback (NULL, LOOP).
 *   --feedback on      (default) each decompressor runs in O-mode and every feedback packet it builds is handed at
 *                      once to the compressor of its direction (a lossless feedback channel without delay; the
 *                      feedback's octets are counted apart, not in the header mean).
 *   --feedback off     each decompressor runs in U-mode and no feedback reaches the compressor.
 *   --bench SECONDS    after the checked pass, compress and decompress the whole capture again and again (fresh
 *                      compressors and decompressors every pass, their creation timed too) until the thread has
 *                      run SECONDS of CPU time, and report headers/s by the thread's CPU time and by wall clock.
 *
 * The packets are the ones `sigkit rohc` takes (crates/taroc/src/capture.rs): IPv4 with a 20-octet header carrying
 * TCP, not a fragment, or IPv6 whose next header is TCP (no extension headers); the IP length fields must agree with
 * the bytes captured (Ethernet padding is cut off), the TCP data offset must be 5 or more and inside the packet, and
 * frames cut by the snap length are skipped. A packet whose IPv4 header checksum or TCP checksum is wrong (checksum
 * offload: a capture taken on the sending host, and every loopback capture) gets both rewritten before use, as
 * sigkit's reader does, so that both compressors see the same bytes (the library rebuilds the IPv4 checksum, so an
 * offloaded one would also not come back byte for byte).
 *
 * Each connection direction (IP version, addresses and ports) has its own compressor and decompressor, small CIDs
 * with MAX_CID 0 (no Add-CID octet), the TCP profile enabled and the Uncompressed profile as the library's fallback
 * (packets it sent otherwise are counted in not_tcp_profile). Every packet is decompressed at once and must come back
 * byte for byte. The compressed header is the ROHC packet's length less the TCP payload's.
 *
 * Prints one JSON object on one line. Exit codes: 0 done; 1 a packet failed to compress or decompress, or came back
 * different; 2 bad usage, an unreadable capture or a library set-up failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rohc/rohc.h>
#include <rohc/rohc_comp.h>
#include <rohc/rohc_decomp.h>

/* Link types libpcap may report for these captures, in case its headers predate them. */
#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif
#define LINKTYPE_RAW 101

/* The largest IP packet (IPv6: 40 + 65535), and room for a ROHC header longer than the original one. */
#define MAX_IP (40 + 65535)
#define ROHC_ROOM (MAX_IP + 512)

/* Why frames were not used (the same reasons sigkit's reader counts). */
struct skipped {
	size_t not_tcp;     /* not IPv4/IPv6, or not carrying TCP */
	size_t truncated;   /* cut by the snap length */
	size_t link;        /* a link type not read */
	size_t unsupported; /* TCP/IP that is not compressed: IPv4 options, IPv6 extension headers, fragments,
	                       lengths that disagree, a bad TCP data offset */
};

/* One TCP/IP packet of the capture, and the connection direction it belongs to. */
struct packet {
	uint8_t *ip;
	size_t len;
	size_t header_len; /* IP + TCP header */
	struct rohc_ts ts;
	size_t dir;
};

/* The capture's packets and directions. */
struct capture {
	struct packet *packets;
	size_t count, room;
	uint8_t (*keys)[37]; /* version, source and destination addresses, ports */
	size_t directions, keys_room;
	size_t frames, checksums_fixed, ipv6;
	struct skipped skipped;
};

/* What one checked pass found. */
struct totals {
	size_t packets, compress_failures, decompress_failures, mismatches, not_tcp_profile;
	uint64_t header_before, header_after, feedback_packets, feedback_bytes, feedback_refused;
};

static void *must_realloc(void *p, size_t size)
{
	void *q = realloc(p, size);
	if(q == NULL)
	{
		fprintf(stderr, "rohc_capture: out of memory\n");
		exit(2);
	}
	return q;
}

/* The library asks for random numbers (no TCP-profile field depends on them); a fixed xorshift keeps runs equal. */
static int random_number(const struct rohc_comp *const comp, void *const user)
{
	static uint32_t x = 0x9e3779b9u;
	(void) comp;
	(void) user;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return (int) (x & 0x7fffffff);
}

static uint16_t be16(const uint8_t *b)
{
	return (uint16_t) ((b[0] << 8) | b[1]);
}

/* RFC 1071: the ones' complement sum of data, added to sum, not yet folded. */
static uint64_t sum16(const uint8_t *data, size_t len, uint64_t sum)
{
	size_t i;
	for(i = 0; i + 1 < len; i += 2)
	{
		sum += be16(data + i);
	}
	if(len & 1)
	{
		sum += (uint64_t) data[len - 1] << 8;
	}
	return sum;
}

static uint16_t fold(uint64_t sum)
{
	while(sum >> 16)
	{
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return (uint16_t) sum;
}

/* The ones' complement sum over the TCP pseudo-header (RFC 9293 §3.1; RFC 8200 §8.1 for IPv6) and segment, the
 * checksum field included: 0xffff when the checksum is right. */
static uint16_t tcp_sum(const uint8_t *ip, size_t len, size_t ip_len)
{
	uint64_t sum = ip_len == 40 ? sum16(ip + 8, 32, 0) : sum16(ip + 12, 8, 0);
	sum += 6 + (len - ip_len);
	return fold(sum16(ip + ip_len, len - ip_len, sum));
}

/* Rewrites wrong checksums as sigkit's reader does (an offloaded capture); returns whether any was wrong. */
static bool repair_checksums(uint8_t *ip, size_t len, size_t ip_len)
{
	bool ip_ok = ip_len == 40 || fold(sum16(ip, 20, 0)) == 0xffff;
	uint16_t c;
	if(ip_ok && tcp_sum(ip, len, ip_len) == 0xffff)
	{
		return false;
	}
	if(ip_len == 20)
	{
		ip[10] = ip[11] = 0;
		c = (uint16_t) ~fold(sum16(ip, 20, 0));
		ip[10] = c >> 8;
		ip[11] = c & 0xff;
	}
	ip[ip_len + 16] = ip[ip_len + 17] = 0;
	c = (uint16_t) ~tcp_sum(ip, len, ip_len);
	ip[ip_len + 16] = c >> 8;
	ip[ip_len + 17] = c & 0xff;
	return true;
}

/* Where the IP packet starts in a frame: its offset, -1 when the frame carries no IPv4 or IPv6, -2 for a link type
 * not read. */
static long ip_offset(int dlt, const uint8_t *f, size_t len)
{
	size_t at;
	uint16_t type;
	uint32_t family;
	switch(dlt)
	{
		case DLT_EN10MB:
			at = 12;
			if(len < at + 2) return -1;
			type = be16(f + at);
			while(type == 0x8100 || type == 0x88a8) /* VLAN tags, possibly stacked */
			{
				at += 4;
				if(len < at + 2) return -1;
				type = be16(f + at);
			}
			return (type == 0x0800 || type == 0x86dd) ? (long) (at + 2) : -1;
		case DLT_LINUX_SLL:
			return (len >= 16 && (be16(f + 14) == 0x0800 || be16(f + 14) == 0x86dd)) ? 16 : -1;
		case DLT_LINUX_SLL2:
			return (len >= 20 && (be16(f) == 0x0800 || be16(f) == 0x86dd)) ? 20 : -1;
		case DLT_RAW:
		case LINKTYPE_RAW:
		case DLT_IPV4:
		case DLT_IPV6:
			return 0;
		case DLT_NULL:
		case DLT_LOOP:
			/* The address family in the capturing host's byte order (NULL) or network order (LOOP): AF_INET is 2,
			 * AF_INET6 24, 28 or 30 depending on the BSD. */
			if(len < 4) return -1;
			family = (uint32_t) f[0] | (uint32_t) f[1] << 8 | (uint32_t) f[2] << 16 | (uint32_t) f[3] << 24;
			if(ntohl(family) < family) family = ntohl(family);
			return (family == 2 || family == 24 || family == 28 || family == 30) ? 4 : -1;
		default:
			return -2;
	}
}

static size_t direction_of(struct capture *c, const uint8_t key[37])
{
	size_t i;
	for(i = 0; i < c->directions; i++)
	{
		if(memcmp(c->keys[i], key, 37) == 0) return i;
	}
	if(c->directions == c->keys_room)
	{
		c->keys_room = c->keys_room ? 2 * c->keys_room : 64;
		c->keys = must_realloc(c->keys, c->keys_room * sizeof(*c->keys));
	}
	memcpy(c->keys[c->directions], key, 37);
	return c->directions++;
}

/* Takes a frame's TCP/IP packet, or counts why not. */
static void take_frame(struct capture *c, int dlt, const struct pcap_pkthdr *h, const uint8_t *frame)
{
	long at = ip_offset(dlt, frame, h->caplen);
	const uint8_t *ip = frame + (at > 0 ? at : 0);
	size_t avail = at >= 0 ? h->caplen - (size_t) at : 0, total, ip_len, tcp_len;
	bool cut = h->caplen < h->len;
	uint8_t key[37] = { 0 };
	struct packet p;

	if(at == -2) { c->skipped.link++; return; }
	if(at < 0 || avail < 1 || (ip[0] >> 4 != 4 && ip[0] >> 4 != 6)) { c->skipped.not_tcp++; return; }
	if(ip[0] >> 4 == 6)
	{
		if(avail < 40) { cut ? c->skipped.truncated++ : c->skipped.not_tcp++; return; }
		ip_len = 40;
		total = 40 + (size_t) be16(ip + 4);
		if(ip[6] != 6)
		{
			/* Hop-by-hop, routing, fragment, destination options, AH, ESP, mobility, HIP, shim6, experiments (RFC 8200 §4, as sigkit lists them)
			 * (sigkit follows the chain to see whether TCP is behind; it never compresses such a packet). */
			static const uint8_t ext[] = { 0, 43, 44, 50, 51, 60, 135, 139, 140, 253, 254 };
			bool is_ext = memchr(ext, ip[6], sizeof(ext)) != NULL;
			if(is_ext && cut) c->skipped.truncated++;
			else if(is_ext) c->skipped.unsupported++; /* counted as TCP that is not compressed */
			else c->skipped.not_tcp++;
			return;
		}
	}
	else
	{
		if(avail < 20 || ip[9] != 6) { c->skipped.not_tcp++; return; }
		ip_len = 20;
		total = be16(ip + 2);
	}
	if(cut || avail < total) { c->skipped.truncated++; return; }
	if((ip_len == 20 && (ip[0] != 0x45 || (be16(ip + 6) & 0x3fff) != 0)) || total < ip_len + 20)
	{
		c->skipped.unsupported++;
		return;
	}
	tcp_len = (size_t) (ip[ip_len + 12] >> 4) * 4;
	if(tcp_len < 20 || ip_len + tcp_len > total) { c->skipped.unsupported++; return; }

	p.ip = must_realloc(NULL, total);
	memcpy(p.ip, ip, total);
	p.len = total;
	p.header_len = ip_len + tcp_len;
	p.ts.sec = (uint64_t) h->ts.tv_sec;
	p.ts.nsec = (uint64_t) h->ts.tv_usec * 1000; /* libpcap scales nanosecond captures to microseconds */
	c->checksums_fixed += repair_checksums(p.ip, total, ip_len);
	key[0] = ip[0] >> 4;
	if(ip_len == 40) memcpy(key + 1, ip + 8, 32);
	else memcpy(key + 1, ip + 12, 8);
	memcpy(key + 33, ip + ip_len, 4);
	p.dir = direction_of(c, key);
	c->ipv6 += ip_len == 40;
	if(c->count == c->room)
	{
		c->room = c->room ? 2 * c->room : 1024;
		c->packets = must_realloc(c->packets, c->room * sizeof(*c->packets));
	}
	c->packets[c->count++] = p;
}

static bool read_capture(const char *path, struct capture *c, int *dlt)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *frame;
	int r;
	pcap_t *pcap = pcap_open_offline(path, err);
	if(pcap == NULL)
	{
		fprintf(stderr, "rohc_capture: %s: %s\n", path, err);
		return false;
	}
	*dlt = pcap_datalink(pcap);
	while((r = pcap_next_ex(pcap, &h, &frame)) == 1)
	{
		c->frames++;
		take_frame(c, *dlt, h, frame);
	}
	if(r == PCAP_ERROR)
	{
		/* A capture cut inside a record: the records before it are used, as sigkit and tshark do. */
		fprintf(stderr, "rohc_capture: warning: %s: %s; the %zu frames before it are used\n", path,
		        pcap_geterr(pcap), c->frames);
	}
	pcap_close(pcap);
	return true;
}

/* One compressor and decompressor: a connection direction's. */
struct pair {
	struct rohc_comp *comp;
	struct rohc_decomp *decomp;
};

static bool pair_open(struct pair *p, bool feedback)
{
	p->comp = rohc_comp_new2(ROHC_SMALL_CID, 0, random_number, NULL);
	p->decomp = rohc_decomp_new2(ROHC_SMALL_CID, 0, feedback ? ROHC_O_MODE : ROHC_U_MODE);
	return p->comp != NULL && p->decomp != NULL &&
	       rohc_comp_enable_profile(p->comp, ROHC_PROFILE_TCP) &&
	       rohc_comp_enable_profile(p->comp, ROHC_PROFILE_UNCOMPRESSED) &&
	       rohc_decomp_enable_profile(p->decomp, ROHC_PROFILE_TCP) &&
	       rohc_decomp_enable_profile(p->decomp, ROHC_PROFILE_UNCOMPRESSED);
}

static void pair_close(struct pair *p)
{
	if(p->comp != NULL) rohc_comp_free(p->comp);
	if(p->decomp != NULL) rohc_decomp_free(p->decomp);
}

static uint8_t wire_mem[ROHC_ROOM], back_mem[ROHC_ROOM], feedback_mem[2048], piggy_mem[2048];

/* One pass over the capture with fresh pairs; counts into t when given (the checked pass). Returns whether every
 * packet came back byte for byte. */
static bool run_pass(const struct capture *c, bool feedback, struct totals *t)
{
	struct pair *pairs = calloc(c->directions ? c->directions : 1, sizeof(*pairs));
	bool ok = true;
	size_t i;
	if(pairs == NULL) { fprintf(stderr, "rohc_capture: out of memory\n"); exit(2); }
	for(i = 0; i < c->directions; i++)
	{
		if(!pair_open(&pairs[i], feedback))
		{
			fprintf(stderr, "rohc_capture: the library refused to create a TCP-profile compressor/decompressor\n");
			exit(2);
		}
	}
	for(i = 0; i < c->count; i++)
	{
		const struct packet *p = &c->packets[i];
		struct pair *pr = &pairs[p->dir];
		const struct rohc_buf in = rohc_buf_init_full(p->ip, p->len, p->ts);
		struct rohc_buf wire = rohc_buf_init_empty(wire_mem, sizeof(wire_mem));
		struct rohc_buf back = rohc_buf_init_empty(back_mem, sizeof(back_mem));
		struct rohc_buf to_send = rohc_buf_init_empty(feedback_mem, sizeof(feedback_mem));
		struct rohc_buf piggybacked = rohc_buf_init_empty(piggy_mem, sizeof(piggy_mem));
		rohc_comp_last_packet_info2_t info;

		if(rohc_compress4(pr->comp, in, &wire) != ROHC_STATUS_OK)
		{
			ok = false;
			if(t) t->compress_failures++;
			continue;
		}
		if(t)
		{
			t->packets++;
			t->header_before += p->header_len;
			t->header_after += wire.len - (p->len - p->header_len);
			memset(&info, 0, sizeof(info)); /* version 0.0 of the structure */
			if(rohc_comp_get_last_packet_info2(pr->comp, &info) && info.profile_id != ROHC_PROFILE_TCP)
				t->not_tcp_profile++;
		}
		wire.time = p->ts;
		if(rohc_decompress3(pr->decomp, wire, &back, &piggybacked, feedback ? &to_send : NULL) != ROHC_STATUS_OK)
		{
			ok = false;
			if(t) t->decompress_failures++;
		}
		else if(back.len != p->len || memcmp(rohc_buf_data(back), p->ip, p->len) != 0)
		{
			ok = false;
			if(t) t->mismatches++;
		}
		if(feedback && to_send.len > 0)
		{
			if(t) { t->feedback_packets++; t->feedback_bytes += to_send.len; }
			/* A refused feedback packet leaves the compressor where it was; counted, the header sizes show it. */
			if(!rohc_comp_deliver_feedback2(pr->comp, to_send) && t) t->feedback_refused++;
		}
	}
	for(i = 0; i < c->directions; i++)
	{
		pair_close(&pairs[i]);
	}
	free(pairs);
	return ok;
}

static double seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Prints s as a JSON string. */
static void json_string(const char *s)
{
	putchar('"');
	for(; *s; s++)
	{
		if(*s == '"' || *s == '\\') printf("\\%c", *s);
		else if((unsigned char) *s < 0x20) printf("\\u%04x", *s);
		else putchar(*s);
	}
	putchar('"');
}

static int usage(const char *me)
{
	fprintf(stderr, "usage: %s [--feedback on|off] [--bench SECONDS] CAPTURE\n", me);
	return 2;
}

int main(int argc, char **argv)
{
	struct capture c;
	struct totals t;
	const char *path = NULL;
	bool feedback = true, ok;
	double bench = 0;
	int dlt = 0, i;
	char *end;

	for(i = 1; i < argc; i++)
	{
		if(!strcmp(argv[i], "--feedback") && i + 1 < argc)
		{
			i++;
			if(!strcmp(argv[i], "on")) feedback = true;
			else if(!strcmp(argv[i], "off")) feedback = false;
			else return usage(argv[0]);
		}
		else if(!strcmp(argv[i], "--bench") && i + 1 < argc)
		{
			bench = strtod(argv[++i], &end);
			if(*end != '\0' || !(bench > 0 && bench < 3600)) return usage(argv[0]);
		}
		else if(argv[i][0] == '-' || path != NULL)
		{
			return usage(argv[0]);
		}
		else
		{
			path = argv[i];
		}
	}
	if(path == NULL) return usage(argv[0]);

	memset(&c, 0, sizeof(c));
	memset(&t, 0, sizeof(t));
	if(!read_capture(path, &c, &dlt)) return 2;
	ok = run_pass(&c, feedback, &t);

	printf("{\"capture\": ");
	json_string(path);
	printf(", \"library\": \"ROHC %s\", \"profile\": \"TCP (RFC 6846)\", \"feedback\": %s, \"link_type\": %d, "
	       "\"frames\": %zu, \"directions\": %zu, \"skipped\": {\"not_tcp\": %zu, \"truncated\": %zu, "
	       "\"unsupported_link\": %zu, \"unsupported_tcp\": %zu}, \"checksums_fixed\": %zu, "
	       "\"packets\": %zu, \"ipv6_packets\": %zu, \"not_tcp_profile\": %zu, "
	       "\"compress_failures\": %zu, \"decompress_failures\": %zu, \"mismatches\": %zu, "
	       "\"round_trip_failures\": %zu, \"header_bytes_before\": %llu, \"header_bytes_after\": %llu, "
	       "\"mean_header_before\": %.3f, \"mean_header_after\": %.3f, "
	       "\"feedback_packets\": %llu, \"feedback_bytes\": %llu, \"feedback_refused\": %llu",
	       rohc_version(), feedback ? "true" : "false", dlt, c.frames, c.directions, c.skipped.not_tcp,
	       c.skipped.truncated, c.skipped.link, c.skipped.unsupported, c.checksums_fixed, t.packets, c.ipv6,
	       t.not_tcp_profile, t.compress_failures, t.decompress_failures, t.mismatches,
	       t.compress_failures + t.decompress_failures + t.mismatches,
	       (unsigned long long) t.header_before, (unsigned long long) t.header_after,
	       t.packets ? (double) t.header_before / (double) t.packets : 0.0,
	       t.packets ? (double) t.header_after / (double) t.packets : 0.0,
	       (unsigned long long) t.feedback_packets, (unsigned long long) t.feedback_bytes,
	       (unsigned long long) t.feedback_refused);
	if(bench > 0 && c.count > 0)
	{
		double cpu0 = seconds(CLOCK_THREAD_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC), cpu, wall;
		size_t passes = 0;
		bool all_ok = true;
		do
		{
			all_ok &= run_pass(&c, feedback, NULL);
			passes++;
			cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
		}
		while(cpu < bench);
		wall = seconds(CLOCK_MONOTONIC) - wall0;
		ok &= all_ok;
		printf(", \"bench_passes\": %zu, \"bench_headers\": %zu, \"bench_cpu_s\": %.3f, \"bench_wall_s\": %.3f, "
		       "\"bench_all_ok\": %s, \"headers_per_s\": %.0f, \"headers_per_wall_s\": %.0f",
		       passes, passes * c.count, cpu, wall, all_ok ? "true" : "false",
		       (double) (passes * c.count) / cpu, (double) (passes * c.count) / wall);
	}
	printf("}\n");
	for(i = 0; i < (int) c.count; i++) free(c.packets[i].ip);
	free(c.packets);
	free(c.keys);
	return ok ? 0 : 1;
}
