#!/usr/bin/env python3
"""Replaces the text between <!-- NAME:begin --> and <!-- NAME:end --> in a
Markdown file with a file's contents, appending the section when absent."""
import os
import sys

document_path, name, content_path = sys.argv[1:4]
begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
document = open(document_path).read()
content = open(content_path).read().rstrip("\n")
section = f"{begin}\n{content}\n{end}"
if begin in document and end in document:
    head, rest = document.split(begin, 1)
    _, tail = rest.split(end, 1)
    document = head + section + tail
else:
    document = document.rstrip("\n") + "\n\n" + section + "\n"
# Written aside and renamed into place: an interrupted run leaves the file whole.
with open(document_path + ".tmp", "w") as out:
    out.write(document)
os.replace(document_path + ".tmp", document_path)
