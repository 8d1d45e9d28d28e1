/* kernel_cache.h - compiled kernels by a hash of what made them: in
 * memory within a run, and in files that later runs read (doc/codegen.md,
 * "The kernel cache"). No LLVM here: the bytes are whatever the caller
 * puts (inductor: the object code and its LLVM IR, inductor_compile.c). */
#ifndef TJ_KERNEL_CACHE_H
#define TJ_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the file format's version: raise it with any change to the format or
 * to what a key hashes (older files then read as foreign and are rebuilt) */
#define KERNEL_CACHE_VERSION 2

/* 128 bits of FNV-1a (hash.h) */
struct kc_key {
	uint64_t hi, lo;
};

/* the key of a kernel: its text (the loop IR, or the LLVM IR it makes),
 * the target (codegen_api's target_id), LLVM's version and CODEGEN_ABI */
struct kc_key kernel_cache_key(const char *kernel_text, const char *target_id,
	const char *llvm_version, int codegen_abi);
/* 32 lowercase hex digits and a NUL */
void kernel_cache_key_hex(struct kc_key key, char out[33]);
bool kernel_cache_key_eq(struct kc_key a, struct kc_key b);

struct kernel_cache;

/* a cache in memory and, when disk is true, in the folder dir (NULL: the
 * default, kernel_cache_default_dir); NULL after tj_error_set when out of
 * memory. The folder is made on the first put. */
struct kernel_cache *kernel_cache_new(const char *dir, bool disk);
void kernel_cache_free(struct kernel_cache *kc);
/* the folder it reads and writes, or NULL when it keeps to memory */
const char *kernel_cache_dir(const struct kernel_cache *kc);

/* $TJIT_CACHE_DIR, else $XDG_CACHE_HOME/tjit, else $HOME/.cache/tjit
 * (malloc'd); NULL when none of them is set */
char *kernel_cache_default_dir(void);

enum kc_result {
	KC_MISS,   /* in neither */
	KC_MEMORY, /* found in memory */
	KC_DISK,   /* read from its file (and now in memory) */
	KC_BAD,    /* its file is corrupt, truncated or foreign: not used;
		      *why says how (malloc'd; NULL when out of memory);
		      compile and put it again */
};

/* looks a kernel up, in memory then on disk. On KC_MEMORY and KC_DISK,
 * *obj and *len are the cache's bytes, valid until kernel_cache_free. */
enum kc_result kernel_cache_get(struct kernel_cache *kc, struct kc_key key,
	const void **obj, size_t *len, char **why);

/* keeps a copy in memory (a key already there keeps its bytes) and, when
 * on disk, writes the file atomically (a temporary file renamed over it).
 * 0, or -1 after tj_error_set (out of memory, or the file could not be
 * written: the caller logs it and goes on with the kernel it has) */
int kernel_cache_put(struct kernel_cache *kc, struct kc_key key, const void *obj, size_t len);

/* the file a key has in the folder (malloc'd), or NULL when memory only */
char *kernel_cache_path(const struct kernel_cache *kc, struct kc_key key);

#endif
