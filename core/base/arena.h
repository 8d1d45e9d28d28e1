/* arena.h - a bump allocator: many small blocks that die together,
 * freed in one call (QBE's alloc/freeall). A graph keeps everything its
 * nodes point to in one (graph.c); a trace attempt or a compile can do
 * the same.
 *
 *   struct arena a = ARENA_INIT;
 *   char *s = arena_strdup(&a, "x");
 *   ...
 *   arena_free(&a);          // everything at once; a is empty again
 */
#ifndef TJ_ARENA_H
#define TJ_ARENA_H

#include <stddef.h>

struct arena_chunk;
struct arena {
	struct arena_chunk *head; /* the chunk being filled; older ones behind it */
	size_t next_size;         /* the size of the next chunk (they double up to a cap) */
	size_t first_size;        /* the first chunk's size; 0: a small default */
};
#define ARENA_INIT {NULL, 0, 0}
/* an arena whose first chunk is n bytes: for users that know they fill
 * many (a trace attempt), so that they do not grow it chunk by chunk */
#define ARENA_INIT_SIZED(n) {NULL, (n), (n)}

/* n zeroed bytes aligned for any type; NULL when out of memory */
void *arena_alloc(struct arena *a, size_t n);
/* a copy of n bytes at p (n == 0 gives a valid pointer); NULL when out of memory */
void *arena_memdup(struct arena *a, const void *p, size_t n);
/* a copy of s; NULL when out of memory (or when s is NULL) */
char *arena_strdup(struct arena *a, const char *s);
/* frees every block; the arena is empty and usable again */
void arena_free(struct arena *a);

#endif
