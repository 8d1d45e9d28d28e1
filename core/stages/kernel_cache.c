/* kernel_cache.c - the kernel cache (kernel_cache.h): an open-addressing
 * table in memory, and one file per kernel in a folder.
 *
 * A file, <32 hex digits of the key>.tjk, is a 48-byte header and the
 * object code; the integers are little-endian:
 *   0  "TJITKERN"     magic
 *   8  u32 version    KERNEL_CACHE_VERSION
 *  12  u32 0          reserved
 *  16  u64 key.hi, u64 key.lo
 *  32  u64 length     of the payload
 *  40  u64 checksum   FNV-1a 64 of the payload
 *  48  the payload (inductor's: the object code, the LLVM IR text, and
 *      the object code's length as a u64: inductor_compile.c) */
#define _GNU_SOURCE /* vasprintf */
#include "kernel_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hash.h"
#include "util.h"

#define KC_MAGIC "TJITKERN"
#define KC_HEADER 48
#define KC_MAX_OBJECT ((uint64_t)1 << 30) /* a longer length field is corrupt */

struct kc_entry {
	struct kc_key key;
	void *obj; /* NULL: an empty slot */
	size_t len;
};

struct kernel_cache {
	char *dir; /* NULL: memory only */
	pthread_mutex_t lock;
	struct kc_entry *slots;
	size_t cap, count; /* cap: a power of two, or 0 */
};

struct kc_key kernel_cache_key(const char *kernel_text, const char *target_id,
	const char *llvm_version, int codegen_abi)
{
	char tail[64];
	int n = snprintf(tail, sizeof tail, "%d %d", codegen_abi, KERNEL_CACHE_VERSION);
	const char *parts[] = { kernel_text ? kernel_text : "", target_id ? target_id : "",
		llvm_version ? llvm_version : "" };
	hash128_t h = HASH_FNV1A128_INIT;
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		h = hash_fnv1a128(h, parts[i], strlen(parts[i]) + 1); /* with the NUL: a separator */
	h = hash_fnv1a128(h, tail, (size_t)n);
	return (struct kc_key){ .hi = (uint64_t)(h >> 64), .lo = (uint64_t)h };
}

void kernel_cache_key_hex(struct kc_key key, char out[33])
{
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)key.hi, (unsigned long long)key.lo);
}

bool kernel_cache_key_eq(struct kc_key a, struct kc_key b)
{
	return a.hi == b.hi && a.lo == b.lo;
}

char *kernel_cache_default_dir(void)
{
	const char *d = getenv("TJIT_CACHE_DIR");
	if (d && *d)
		return util_strdup(d);
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;
	/* (XDG: a relative $XDG_CACHE_HOME is to be ignored) */
	if (xdg && *xdg == '/')
		path = util_malloc(strlen(xdg) + sizeof "/tjit");
	else if (home && *home)
		path = util_malloc(strlen(home) + sizeof "/.cache/tjit");
	else
		return NULL;
	if (path)
		sprintf(path, "%s%s", xdg && *xdg == '/' ? xdg : home,
			xdg && *xdg == '/' ? "/tjit" : "/.cache/tjit");
	return path;
}

struct kernel_cache *kernel_cache_new(const char *dir, bool disk)
{
	struct kernel_cache *kc = util_calloc(1, sizeof *kc);
	if (!kc)
		goto oom;
	pthread_mutex_init(&kc->lock, NULL);
	if (disk) {
		kc->dir = dir ? util_strdup(dir) : kernel_cache_default_dir();
		if (dir && !kc->dir) {
			kernel_cache_free(kc);
			goto oom;
		}
	}
	return kc;
oom:
	tj_error_set("out of memory");
	return NULL;
}

void kernel_cache_free(struct kernel_cache *kc)
{
	if (!kc)
		return;
	for (size_t i = 0; i < kc->cap; i++)
		free(kc->slots[i].obj);
	free(kc->slots);
	free(kc->dir);
	pthread_mutex_destroy(&kc->lock);
	free(kc);
}

const char *kernel_cache_dir(const struct kernel_cache *kc)
{
	return kc->dir;
}

char *kernel_cache_path(const struct kernel_cache *kc, struct kc_key key)
{
	if (!kc->dir)
		return NULL;
	char hex[33];
	kernel_cache_key_hex(key, hex);
	char *p = util_malloc(strlen(kc->dir) + sizeof hex + sizeof "/.tjk");
	if (p)
		sprintf(p, "%s/%s.tjk", kc->dir, hex);
	return p;
}

/* a malloc'd message, or NULL when out of memory (no xasprintf here: the
 * stages return a status) */
__attribute__((format(printf, 1, 2)))
static char *kc_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* --- memory --- */

static struct kc_entry *slot_of(struct kc_entry *slots, size_t cap, struct kc_key key)
{
	size_t i = (size_t)(key.lo ^ key.hi) & (cap - 1);
	while (slots[i].obj && !kernel_cache_key_eq(slots[i].key, key))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static struct kc_entry *mem_find(struct kernel_cache *kc, struct kc_key key)
{
	if (!kc->cap)
		return NULL;
	struct kc_entry *e = slot_of(kc->slots, kc->cap, key);
	return e->obj ? e : NULL;
}

/* takes obj (a malloc'd block); a key already there keeps its bytes and
 * obj is freed. The entry, or NULL when out of memory (obj freed) */
static struct kc_entry *mem_add(struct kernel_cache *kc, struct kc_key key, void *obj, size_t len)
{
	struct kc_entry *e = mem_find(kc, key);
	if (e) {
		free(obj);
		return e;
	}
	if ((kc->count + 1) * 2 > kc->cap) {
		size_t cap = kc->cap ? kc->cap * 2 : 16;
		struct kc_entry *slots = util_calloc(cap, sizeof *slots);
		if (!slots) {
			free(obj);
			return NULL;
		}
		for (size_t i = 0; i < kc->cap; i++)
			if (kc->slots[i].obj)
				*slot_of(slots, cap, kc->slots[i].key) = kc->slots[i];
		free(kc->slots);
		kc->slots = slots;
		kc->cap = cap;
	}
	e = slot_of(kc->slots, kc->cap, key);
	*e = (struct kc_entry){ .key = key, .obj = obj, .len = len };
	kc->count++;
	return e;
}

/* --- files --- */

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void header_write(unsigned char *h, struct kc_key key, const void *obj, size_t len)
{
	memcpy(h, KC_MAGIC, 8);
	put_u32(h + 8, KERNEL_CACHE_VERSION);
	put_u32(h + 12, 0);
	put_u64(h + 16, key.hi);
	put_u64(h + 24, key.lo);
	put_u64(h + 32, len);
	put_u64(h + 40, hash_fnv1a(obj, len));
}

/* the whole file, malloc'd; NULL with *absent set when there is none, or
 * NULL with *why when it cannot be read */
static unsigned char *file_read(const char *path, size_t *size, bool *absent, char **why)
{
	*absent = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*absent = errno == ENOENT;
		if (!*absent)
			*why = kc_printf("cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	unsigned char *buf = NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = kc_printf("%s: not a regular file", path);
		goto done;
	}
	if ((uint64_t)st.st_size > KC_HEADER + KC_MAX_OBJECT) {
		*why = kc_printf("%s: too large for a kernel (%lld bytes)", path, (long long)st.st_size);
		goto done;
	}
	size_t n = (size_t)st.st_size, got = 0;
	buf = util_malloc(n ? n : 1);
	if (!buf) {
		*why = kc_printf("%s: out of memory", path);
		goto done;
	}
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	*size = got; /* (shorter if it shrank meanwhile: then truncated) */
done:
	close(fd);
	return buf;
}

/* NULL when buf is the entry of key, else why not (malloc'd) */
static char *entry_check(const unsigned char *buf, size_t size, struct kc_key key, const char *path)
{
	if (size < KC_HEADER) {
		if (size >= 8 && memcmp(buf, KC_MAGIC, 8) != 0)
			return kc_printf("%s: not a kernel cache file", path);
		return kc_printf("%s: truncated (%zu bytes, shorter than its header)", path, size);
	}
	if (memcmp(buf, KC_MAGIC, 8) != 0)
		return kc_printf("%s: not a kernel cache file", path);
	uint32_t version = get_u32(buf + 8);
	if (version != KERNEL_CACHE_VERSION)
		return kc_printf("%s: cache format version %u, not %d", path, version, KERNEL_CACHE_VERSION);
	struct kc_key k = { get_u64(buf + 16), get_u64(buf + 24) };
	if (!kernel_cache_key_eq(k, key))
		return kc_printf("%s: holds another kernel's entry", path);
	uint64_t len = get_u64(buf + 32);
	if (len != size - KC_HEADER)
		return kc_printf("%s: truncated or corrupt (%zu bytes of object code, header says %llu)",
			path, size - KC_HEADER, (unsigned long long)len);
	if (hash_fnv1a(buf + KC_HEADER, len) != get_u64(buf + 40))
		return kc_printf("%s: corrupt (checksum mismatch)", path);
	return NULL;
}

/* KC_MISS, KC_DISK with the entry in memory, or KC_BAD with *why */
static enum kc_result disk_get(struct kernel_cache *kc, struct kc_key key, struct kc_entry **out, char **why)
{
	char *path = kernel_cache_path(kc, key);
	if (!path) {
		*why = kc_printf("out of memory");
		return KC_BAD;
	}
	size_t size = 0;
	bool absent;
	enum kc_result r = KC_BAD;
	unsigned char *buf = file_read(path, &size, &absent, why);
	if (!buf) {
		r = absent ? KC_MISS : KC_BAD;
		goto done;
	}
	if ((*why = entry_check(buf, size, key, path)))
		goto done;
	size_t len = size - KC_HEADER;
	memmove(buf, buf + KC_HEADER, len); /* the block keeps its size: one copy the less */
	*out = mem_add(kc, key, buf, len);
	buf = NULL;
	if (*out)
		r = KC_DISK;
	else
		*why = kc_printf("out of memory");
done:
	free(buf);
	free(path);
	return r;
}

enum kc_result kernel_cache_get(struct kernel_cache *kc, struct kc_key key,
	const void **obj, size_t *len, char **why)
{
	*obj = NULL;
	*len = 0;
	*why = NULL;
	pthread_mutex_lock(&kc->lock);
	struct kc_entry *e = mem_find(kc, key);
	enum kc_result r = e ? KC_MEMORY : KC_MISS;
	if (!e && kc->dir)
		r = disk_get(kc, key, &e, why);
	if (e) {
		*obj = e->obj;
		*len = e->len;
	}
	pthread_mutex_unlock(&kc->lock);
	return r;
}

/* makes the folder and its parents (0700: kernels are code this user runs) */
static int mkdir_p(const char *dir)
{
	char *p = util_strdup(dir);
	if (!p)
		return -1;
	int rc = 0;
	for (char *s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		if (!(*s = c))
			break;
	}
	free(p);
	return rc;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int disk_put(struct kernel_cache *kc, struct kc_key key, const void *obj, size_t len)
{
	char *path = kernel_cache_path(kc, key);
	char *tmp = path ? kc_printf("%s.XXXXXX", path) : NULL;
	int fd, rc = -1;
	if (!tmp) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	if (mkdir_p(kc->dir) < 0) {
		tj_error_set("kernel cache: cannot make %s: %s", kc->dir, strerror(errno));
		goto cleanup;
	}
	unsigned char header[KC_HEADER];
	header_write(header, key, obj, len);
	fd = mkstemp(tmp);
	int bad = fd < 0 || write_all(fd, header, sizeof header) < 0 || write_all(fd, obj, len) < 0;
	if (fd >= 0 && close(fd) < 0)
		bad = 1;
	fd = -1;
	if (bad) {
		tj_error_set("kernel cache: cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	/* atomic: a reader sees the old file or the new one, never a part */
	if (rename(tmp, path) < 0) {
		tj_error_set("kernel cache: cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (rc < 0 && tmp)
		unlink(tmp);
	free(tmp);
	free(path);
	return rc;
}

int kernel_cache_put(struct kernel_cache *kc, struct kc_key key, const void *obj, size_t len)
{
	void *copy = util_malloc(len ? len : 1);
	if (!copy) {
		tj_error_set("out of memory");
		return -1;
	}
	memcpy(copy, obj, len);
	pthread_mutex_lock(&kc->lock);
	int rc = mem_add(kc, key, copy, len) ? 0 : -1;
	if (rc < 0)
		tj_error_set("out of memory");
	else if (kc->dir)
		rc = disk_put(kc, key, obj, len);
	pthread_mutex_unlock(&kc->lock);
	return rc;
}
