"""Tests of the flag definitions that the scripts share."""

from absl import flags

from agents.training import shared_flags


def test_run_flags_keep_the_first_definition_and_allow_override(
        monkeypatch):
    values = flags.FlagValues()
    calls = []
    define_string = flags.DEFINE_string

    def define(name, default, help_string, **kwargs):
        calls.append((name, default, help_string, kwargs))
        define_string(
            name, default, help_string, flag_values=values, **kwargs)

    monkeypatch.setattr(shared_flags, 'FLAGS', values)
    monkeypatch.setattr(flags, 'DEFINE_string', define)
    shared_flags.define_run_flags(
        'restore', 'Where the videos go.', (define, 'first', 'a', 'First.'),
        (define, 'second', None, 'Second.', dict(short_name='s')))
    shared_flags.define_run_flags(
        'export', 'Again.', (define, 'first', 'b', 'Again.'))
    override = dict(allow_override=True)
    assert calls == [
        ('logdir', None, 'Run folder written by agents.scripts.train, '
         'holding config.yaml and checkpoints.', override),
        ('outdir', None, 'Where the videos go.', override),
        ('checkpoint', None, 'Checkpoint to restore, by name in the run '
         'folder (e.g. model.ckpt-100000) or by path; the latest when '
         'unset.', override),
        ('member', None, 'Member of a population (train.py --seeds) to use, '
         'e.g. seed-3 or, of variants, learning_rate=1e-3/seed-3; by '
         'default the one of the best last evaluation.', override),
        ('first', 'a', 'First.', override),
        ('second', None, 'Second.', dict(override, short_name='s'))]
    assert values['first'].default == 'a'
    assert values['outdir'].default is None
