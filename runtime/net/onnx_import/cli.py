"""``avta import MODEL.onnx -o NET.yaml``: the command's handler (docs/cli.md, docs/onnx.md)."""

from pathlib import Path

from avta.errors import UserError, check_output_file

from .walk import import_onnx


def cmd_import(args):
    """Handler of ``avta import``: import, print the scales, write NET.yaml and NET.npz."""
    from ..io import save
    check_output_file(args.output, "-o")
    if Path(args.output).suffix not in (".yaml", ".yml"):
        raise UserError(f"-o {args.output}: name the network file NAME.yaml (avta run takes "
                        f"a network by its .yaml or .yml suffix; the weights go to NAME.npz)")
    outputs = [o for o in (args.outputs or "").split(",") if o] or None
    imported = import_onnx(args.model, batch=args.batch, outputs=outputs,
                           host_requant=args.host_requant,
                           fixed_point=getattr(args, "fixed_point", False))
    yaml_path, npz_path = save(imported.graph, args.output)
    print(imported.graph.summary())
    print(imported.report())
    print(f"wrote {yaml_path} and {npz_path}")
    return 0
