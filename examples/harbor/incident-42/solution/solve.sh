#!/bin/sh
# Reference solution: look the incident up through checkrein and write the cited diagnosis.
set -eu
python3 /solution/solve.py
