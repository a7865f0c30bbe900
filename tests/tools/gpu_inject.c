/*
 * gpu_inject — do what the CUDA driver does with CUDA_INJECTION64_PATH:
 * load a library, call its InitializeInjection(), then use its annotation
 * API.  Prints "InitializeInjection: N" (1: tracing CUDA, 0: refused).
 *
 * Usage: gpu_inject LIBRARY
 * Exit status 0 when the library loaded and answered, 1 otherwise.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpu_inject LIBRARY\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "gpu_inject: %s\n", dlerror());
        return 1;
    }
    int (*init)(void);
    void (*push)(const char *);
    void (*pop)(void);
    *(void **)&init = dlsym(h, "InitializeInjection");
    *(void **)&push = dlsym(h, "dpt_range_push");
    *(void **)&pop = dlsym(h, "dpt_range_pop");
    if (init == NULL || push == NULL || pop == NULL) {
        fprintf(stderr, "gpu_inject: %s lacks the injection or annotation entry points\n", argv[1]);
        return 1;
    }
    printf("InitializeInjection: %d\n", init());
    fflush(stdout);
    push("injected");
    pop();
    return 0;
}
