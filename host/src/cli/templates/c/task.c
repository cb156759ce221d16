// {{name}}: a qhost task. Its input is a name; its output greets it.
//
// task.h and task.c are the bindings `wit-bindgen c` generates from wit/ (build.sh puts
// them in gen/). `exports_task_run` runs once per attempt.

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"

static void log_line(qhost_task_host_level_t level, const char *message) {
    task_string_t text;
    // The host copies the message; `text` only borrows it.
    task_string_set(&text, message);
    qhost_task_host_log(level, &text);
}

// Returns true with the output in `ret` (malloc'ed: the host frees it), or false with a
// message in `err` for outcome `guest-error` (retried while attempts are left). The
// arguments are ours to free.
bool exports_task_run(task_list_u8_t *input, task_task_info_t *info, task_list_u8_t *ret,
                      task_string_t *err) {
    const uint8_t *start = input->ptr, *end = input->ptr + input->len;
    while (start < end && isspace(*start)) start++;
    while (end > start && isspace(end[-1])) end--;
    size_t name_len = (size_t)(end - start);
    bool ok = name_len > 0;
    if (!ok) {
        task_string_dup(err, "the input is empty: give a name, such as --input world");
    } else {
        char message[96];
        snprintf(message, sizeof message, "task %llu attempt %u: %zu bytes",
                 (unsigned long long)info->id, (unsigned)info->attempt, input->len);
        log_line(QHOST_TASK_TYPES_LEVEL_INFO, message);

        const char *before = "Hello, ", *after = "!";
        size_t len = strlen(before) + name_len + strlen(after);
        ret->ptr = malloc(len);
        if (ret->ptr == NULL) abort();
        memcpy(ret->ptr, before, strlen(before));
        memcpy(ret->ptr + strlen(before), start, name_len);
        memcpy(ret->ptr + strlen(before) + name_len, after, strlen(after));
        ret->len = len;
    }
    task_list_u8_free(input);
    task_task_info_free(info);
    return ok;
}
