"""The lessons under nbval: say which store they ran on, first thing in the report; and start a lesson's
kernel once more if another process took one of its ports before it bound it (`support.processes`)."""

import os

import nbval.kernel

from support.processes import kernel_start_retried_on_a_taken_port

nbval.kernel.start_new_kernel = kernel_start_retried_on_a_taken_port(nbval.kernel.start_new_kernel)


def pytest_report_header(config):
    return f"emqlab lessons: EMQLAB_BACKEND={os.environ.get('EMQLAB_BACKEND', 'fake')}"
