"""The bundled starter texts: what callers say to voice agents, and what agents say back.

Numbers are written the way the synthetic caller speaks them (digit by digit for order and
tracking numbers), so the reference is exactly what is in the audio.
"""

from __future__ import annotations

# (utterance id, category, text)
STT_UTTERANCES: tuple[tuple[str, str, str], ...] = (
    ("u001", "order_number", "My order number is four five two seven one."),
    ("u002", "order_number", "The order number is seven seven three zero nine two."),
    ("u003", "order_number", "I am calling about order eight one six four."),
    ("u004", "tracking", "My tracking number is three nine one two eight eight four."),
    ("u005", "tracking", "Can you check tracking number six zero five five one?"),
    ("u006", "tracking", "The package with tracking number two two four nine has not arrived."),
    ("u007", "order_number", "Order number nine three one five was charged twice."),
    ("u008", "account", "My account number is five one eight zero three."),
    ("u009", "account", "The last four digits of my card are six two nine one."),
    ("u010", "account", "My member number is four four zero seven six."),
    ("u011", "date_time", "I would like to book an appointment for next Tuesday at three in the afternoon."),
    ("u012", "date_time", "Can we move it to Friday morning at nine?"),
    ("u013", "date_time", "My appointment is on the fourteenth of March."),
    ("u014", "date_time", "Is there anything available on Monday the second?"),
    ("u015", "date_time", "I can come in at half past ten tomorrow."),
    ("u016", "date_time", "The delivery was supposed to arrive on the twenty first."),
    ("u017", "date_time", "Please call me back after five this evening."),
    ("u018", "date_time", "Could you schedule the technician for Wednesday between noon and two?"),
    ("u019", "name", "My name is Maria Gonzalez."),
    ("u020", "name", "The account is under the name David Chen."),
    ("u021", "name", "This is Sarah Thompson calling about my prescription."),
    ("u022", "name", "You can ask for Robert Williams at the front desk."),
    ("u023", "name", "My last name is spelled S M I T H."),
    ("u024", "name", "I am calling on behalf of my mother, Linda Johnson."),
    ("u025", "address", "I live at twelve Oak Street, Springfield."),
    ("u026", "address", "Please send it to forty two Maple Avenue, apartment three."),
    ("u027", "address", "The new address is nine hundred Pine Road, Portland, Oregon."),
    ("u028", "address", "My zip code is nine four one zero three."),
    ("u029", "address", "Ship it to my office on Main Street instead of my home."),
    ("u030", "address", "I moved to seventeen Elm Court last month."),
    ("u031", "amount", "I was charged forty five dollars and twenty cents."),
    ("u032", "amount", "The refund should be one hundred and twenty dollars."),
    ("u033", "amount", "My balance says three hundred dollars, but I paid it."),
    ("u034", "amount", "Can I pay fifty dollars now and the rest next week?"),
    ("u035", "amount", "The bill went up by twelve dollars this month."),
    ("u036", "amount", "I would like to transfer two thousand dollars to savings."),
    ("u037", "confirmation", "Yes, that is correct."),
    ("u038", "confirmation", "No, that is not right."),
    ("u039", "confirmation", "Yes please."),
    ("u040", "confirmation", "That works for me."),
    ("u041", "confirmation", "Sure, go ahead."),
    ("u042", "confirmation", "No thank you."),
    ("u043", "confirmation", "Can you repeat that?"),
    ("u044", "confirmation", "I would like to speak to a person."),
    ("u045", "confirmation", "Cancel that, please."),
    ("u046", "confirmation", "That is all, thank you."),
    ("u047", "request", "I need to reset my password because I am locked out of my account."),
    ("u048", "request", "My internet has been dropping every few minutes since yesterday."),
    ("u049", "request", "I want to cancel my subscription and get a refund for this month."),
    ("u050", "request", "Can you tell me where my package is? It was supposed to be here on Monday."),
    ("u051", "request", "I would like to change the shipping address on my order before it goes out."),
    ("u052", "request", "The app keeps crashing when I try to open my billing history."),
    ("u053", "request", "I need to refill my prescription and pick it up at the pharmacy on Main Street."),
    ("u054", "request", "Could you explain the extra charge on my last statement?"),
    ("u055", "request", "I received the wrong item, and I would like to exchange it for the right size."),
    ("u056", "request", "My flight was cancelled, and I need to rebook for tomorrow morning."),
    ("u057", "request", "Is it possible to upgrade my plan without changing my phone number?"),
    ("u058", "request", "I have been waiting on hold for twenty minutes, and nobody has helped me."),
    ("u059", "request", "Please add my wife as an authorized user on the account."),
    ("u060", "request", "I would like to know the status of my insurance claim from last week."),
    ("u061", "request", "The heating in my apartment stopped working, and I need someone to come out today."),
    ("u062", "request", "Can you send me a copy of my receipt by email?"),
    ("u063", "request", "I am trying to activate my new card, but the code is not working."),
    ("u064", "request", "What time does the store close on Saturday?"),
)

# (prompt id, category, text)
TTS_PROMPTS: tuple[tuple[str, str, str], ...] = (
    ("p001", "order_tracking", "Your order has shipped and should arrive on Thursday."),
    ("p002", "order_tracking", "I found your order. It is out for delivery today."),
    ("p003", "order_tracking", "Your package was delivered this morning at the front door."),
    ("p004", "order_tracking", "The tracking number has been sent to your email address."),
    ("p005", "order_tracking", "It looks like your order is delayed by two days. I am sorry about that."),
    ("p006", "order_tracking", "Would you like me to send you text updates about this delivery?"),
    ("p007", "order_tracking", "I have started a replacement order for the missing item."),
    ("p008", "order_tracking", "Your refund will appear on your statement within five business days."),
    ("p009", "appointments", "I have booked you for Tuesday at three in the afternoon."),
    ("p010", "appointments", "The earliest opening is tomorrow at nine in the morning."),
    ("p011", "appointments", "Your appointment has been moved to Friday."),
    ("p012", "appointments", "Please arrive ten minutes early to fill out your forms."),
    ("p013", "appointments", "Would you like a reminder call the day before?"),
    ("p014", "appointments", "I have cancelled your appointment. Is there anything else I can do?"),
    ("p015", "appointments", "Doctor Patel has an opening on Monday afternoon."),
    ("p016", "account_verification", "Before we continue, can you confirm your date of birth?"),
    ("p017", "account_verification", "Thank you. I have verified your identity."),
    ("p018", "account_verification", "Please tell me the last four digits of the card on file."),
    ("p019", "account_verification", "I sent a six digit code to your phone. Please read it back to me."),
    ("p020", "account_verification", "That code does not match. Let us try again."),
    ("p021", "account_verification", "For your security, I cannot share that information over the phone."),
    ("p022", "account_verification", "Your password has been reset. Check your email for a link."),
    ("p023", "tech_support", "Please unplug the router, wait thirty seconds, and plug it back in."),
    ("p024", "tech_support", "Can you tell me what color the light on the front of the modem is?"),
    ("p025", "tech_support", "I am running a line test now. This will take about a minute."),
    ("p026", "tech_support", "It looks like there is an outage in your area."),
    ("p027", "tech_support", "Try closing the app and opening it again."),
    ("p028", "tech_support", "I have escalated this to our technical team."),
    ("p029", "tech_support", "A technician can visit on Wednesday between noon and four."),
    ("p030", "tech_support", "Is there anything else I can help you with today?"),
    ("p031", "passage", "Thank you for calling. I can see that your order was placed on Monday and shipped from our "
                        "warehouse on Tuesday. The carrier shows that it is currently in transit and should arrive "
                        "by Thursday evening. If it does not arrive by then, please call us back and we will send a "
                        "replacement at no cost to you."),
    ("p032", "passage", "I understand how frustrating it is when your internet keeps dropping. I have checked your "
                        "line, and the signal from our side looks healthy, so the problem is most likely inside your "
                        "home. Let us start by restarting your router, and then I will walk you through a few "
                        "settings that often fix this."),
    ("p033", "passage", "Your appointment with Doctor Patel is confirmed for Tuesday at three in the afternoon at our "
                        "Main Street clinic. Please bring your insurance card and a list of any medications you are "
                        "taking. If you need to cancel or reschedule, let us know at least one day in advance."),
    ("p034", "passage", "To protect your account, I need to verify a few details before we make any changes. I will "
                        "send a six digit code to the phone number we have on file. Once you read it back to me, I "
                        "can update your mailing address and issue a new card."),
    ("p035", "passage", "I have reviewed your last statement, and the extra charge comes from an international call "
                        "made on the fourth. Since this is the first time it has happened, I have applied a one time "
                        "credit of twelve dollars to your account. You will see it on your next bill."),
)
