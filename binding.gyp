{
  "targets": [
    {
      "target_name": "threadlock",
      "sources": [
        "src/binding.c", "src/binding_names.c", "src/env.c", "src/ready.c",
        "src/heap.c", "src/table.c", "src/gate_queue.c", "src/gates.c",
        "src/rwlock.c", "src/sem.c", "src/owners.c",
        "src/lock.c", "src/names.c", "src/alloc.c", "src/singleton.c",
        "src/host/binding_host.c", "src/host/binding_shm.c"
      ],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags_c": ["-std=c11", "-Wall", "-Wextra", "-O2"],
      "conditions": [
        ["OS=='linux'", {
          "sources": ["src/platform_linux.c", "src/host/layout.c",
                      "src/host/doorbell.c", "src/host/lists.c",
                      "src/host/repair.c", "src/host/crit.c",
                      "src/host/watch.c", "src/host/request.c",
                      "src/host/attach.c", "src/host/platform_linux.c",
                      "src/host/files_linux.c", "src/host/shm_linux.c",
                      "src/host/shm_owners.c", "src/host/shm_wait.c",
                      "src/host/shm_rw.c"],
          "defines": ["TL_HOST_SUPPORTED"],
          "ldflags": ["-Wl,-z,nodelete"]
        }],
        ["OS=='win'", {
          "sources": ["src/platform_win.c"]
        }],
        ["OS!='linux' and OS!='win'", {
          "sources": ["src/platform_none.c"]
        }]
      ],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-Wall", "-Wextra"]
      }
    }
  ]
}
