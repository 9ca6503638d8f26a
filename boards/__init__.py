"""armgen data package armgen.data.boards (see generator/armgen/data/__init__.py): data files only."""
