"""Runs each argument as a cell in a real Jupyter kernel (ipykernel, started by jupyter_client, as
a notebook server does) and prints the kernel's output streams, each line prefixed with its
stream's name (tests/python/test_ipython.py). A literal \\n in an argument is a newline."""
import sys

from jupyter_client.manager import start_new_kernel

km, kc = start_new_kernel(kernel_name="python3")
try:
    for cell in sys.argv[1:]:
        msg_id = kc.execute(cell.replace("\\n", "\n"))
        while True:
            m = kc.get_iopub_msg(timeout=120)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                sys.stdout.write(content["text"])
            elif kind == "error":
                print(f"[error] {content['ename']}: {content['evalue']}")
            elif kind == "execute_result":
                print("[result] " + content["data"].get("text/plain", ""))
            elif kind == "display_data" and "text/html" in content["data"]:
                print("[display] " + content["data"]["text/html"].replace("\n", " "))
            elif kind == "status" and content["execution_state"] == "idle":
                break
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
