/* arena.c - the bump allocator of arena.h */
#include "arena.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

#define ARENA_FIRST_CHUNK 2048   /* most graphs are small */
#define ARENA_MAX_CHUNK 65536    /* beyond this, doubling only wastes */

static struct arena_chunk *chunk_new(size_t size)
{
	if (size > (size_t)-1 - sizeof(struct arena_chunk))
		return NULL;
	struct arena_chunk *c = util_malloc(sizeof *c + size);  /* counted */
	if (c) {
		c->used = 0;
		c->size = size;
	}
	return c;
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t align = sizeof(max_align_t);
	if (n > (size_t)-1 - align)
		return NULL;
	n = n ? (n + align - 1) / align * align : align;
	struct arena_chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		size_t size = a->next_size ? a->next_size : ARENA_FIRST_CHUNK;
		if (c && n > size / 4) {
			/* a big block gets a chunk of its own, behind the one
			 * being filled, which goes on filling */
			struct arena_chunk *big = chunk_new(n);
			if (!big)
				return NULL;
			big->used = n;
			big->next = c->next;
			c->next = big;
			return memset(big->data, 0, n);
		}
		c = chunk_new(size > n ? size : n);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
		a->next_size = size < ARENA_MAX_CHUNK ? size * 2 : size;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

void *arena_memdup(struct arena *a, const void *p, size_t n)
{
	void *d = arena_alloc(a, n);
	if (d && n)
		memcpy(d, p, n);
	return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_memdup(a, s, strlen(s) + 1) : NULL;
}

void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;
		free(a->head);
		a->head = next;
	}
	a->next_size = a->first_size;
}
