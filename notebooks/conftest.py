"""The lessons under nbval: say which store they ran on, first thing in the report."""

import os


def pytest_report_header(config):
    return f"emqlab lessons: EMQLAB_BACKEND={os.environ.get('EMQLAB_BACKEND', 'fake')}"
