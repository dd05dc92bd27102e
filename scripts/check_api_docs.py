#!/usr/bin/env python3
"""Every public name in doxygen's XML output has a description.

doxygen 1.9.4 warns about most undocumented names, but not about enumerators, namespaces, template
specializations, destructors, defaulted or deleted special members, nor a class whose only member is an
inheriting constructor. This reads the XML that scripts/api_reference.sh has doxygen write beside the
HTML and names every public class, namespace, member and enumerator without a comment.

usage: check_api_docs.py XML_DIRECTORY
"""
import os
import sys
import xml.etree.ElementTree as ElementTree


def described(element):
    """Whether the element's brief or detailed description holds any text."""
    for tag in ("briefdescription", "detaileddescription"):
        description = element.find(tag)
        if description is not None and "".join(description.itertext()).strip():
            return True
    return False


def location(element):
    where = element.find("location")
    if where is None:
        return "?"
    return "%s:%s" % (where.get("file"), where.get("line"))


def internal(name):
    """Names users never write: swl::detail and what is inside it."""
    return "::detail" in name or name.startswith("detail")


def undocumented(directory):
    found = []
    for file_name in sorted(os.listdir(directory)):
        if not file_name.endswith(".xml") or file_name in ("index.xml", "Doxyfile.xml"):
            continue
        root = ElementTree.parse(os.path.join(directory, file_name)).getroot()
        for compound in root.iter("compounddef"):
            kind = compound.get("kind")
            if kind not in ("class", "struct", "union", "namespace", "file"):
                continue
            name = compound.findtext("compoundname", "")
            if internal(name) or compound.get("prot", "public") != "public":
                continue
            if location(compound).startswith("[generated]"):
                continue  # doxygen's own, for names the headers use from elsewhere (std, ::grpc)
            if kind == "file" and not location(compound).startswith("swl/"):
                continue  # the main page, not a header
            if not described(compound):
                found.append("%s: %s %s" % (location(compound), kind, name))
            for member in compound.iter("memberdef"):
                if member.get("prot") != "public" or member.get("kind") == "friend":
                    continue
                qualified = name + "::" + member.findtext("name", "")
                if internal(qualified):
                    continue
                if not described(member):
                    found.append("%s: %s %s" % (location(member), member.get("kind"), qualified))
                for value in member.iter("enumvalue"):
                    if not described(value):
                        found.append("%s: enumerator %s::%s" % (location(member), qualified, value.findtext("name", "")))
    return sorted(set(found))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    missing = undocumented(sys.argv[1])
    for line in missing:
        print("undocumented: " + line)
    if missing:
        sys.exit("%d public names without a comment (a /// above them, or ///< after them)" % len(missing))


if __name__ == "__main__":
    main()
