"""What every server-side process needs around its ``main``, kept out of the SDK (``weir``).

Brokers, the controller, the web and Celery processes, ``make up`` (``deploy.local``) and the
benchmarks start, log, stop and protect their files the same way; an application using the SDK
does none of it, so these helpers are not in the ``weir`` distribution (docs/architecture.md,
"Layout"). This package imports ``weir`` and libraries, never a server package, so that each of
them may use it.

- ``lifeline``: a child process dies with its parent.
- ``stop_signals``: SIGTERM / SIGINT handled through a pipe and a thread (no deadlock on a second signal).
- ``logging_setup`` and ``request_ids``: text or JSON log lines (``WEIR_LOG_FORMAT``) and the request id context.
- ``private_files``: data and secret files readable by their owner only.
- ``malloc_tuning``: glibc's allocator kept from returning large buffers after every message.
- ``pem``: certificate, key and CA files read with one clear error.
"""
